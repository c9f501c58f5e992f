"""The choice of sytrd's native column loop (solvers/plan.py's choose_sytrd_loop: the fused loop or the
kernel loop, native/solvers/sytrd_fused.cu), made once at the entry, on a machine without a GPU:
the rule, the plan and its header, the bench's rows; a CPU run is unchanged by it (at one rank the
host BLAS loop, sytrd_host.py)."""
import argparse

import numpy as np
import pytest

from solvers import plan
from solvers.backend import Collectives
from solvers.bench.sygvd import _configurations
from solvers.distributed import DistMatrix, ProcessGrid
from solvers.errors import InputError
from solvers.plan import SYTRD_LOOPS, choose_sytrd_loop, plan_for, resolve
from solvers.problems import random_symmetric
from solvers.sytrd import sytrd


def test_the_fused_loop_is_taken_when_asked_for_over_several_gpu_ranks():
    assert choose_sytrd_loop("auto", 4, True) == (
        "kernels", "auto: the fused loop is taken only when asked for until it is measured on a GPU")
    assert choose_sytrd_loop("fused", 2, True) == ("fused", "requested")
    assert choose_sytrd_loop("auto", 1, True) == ("kernels", "one rank: no column collective to fuse")
    assert choose_sytrd_loop("fused", 4, False) == ("kernels", "a CPU run has no native loop")
    assert choose_sytrd_loop("kernels", 4, True) == ("kernels", "requested")
    with pytest.raises(InputError, match="sytrd loop must be one of auto, fused, kernels"):
        choose_sytrd_loop("graph", 2, True)


def test_the_plan_carries_the_loop_and_says_it():
    p = resolve(np, 100, 1, sytrd_loop="kernels")
    assert (p.sytrd_loop, p.sytrd_loop_why) == ("kernels", "requested")
    assert "sytrd loop kernels [requested]" in dict(p.header())["stages"]
    assert resolve(np, 100, 1).sytrd_loop == "kernels"   # a CPU run: nothing to fuse


def test_a_cpu_sytrd_runs_the_host_loop_whatever_the_loop():
    from mpi4py import MPI
    grid = ProcessGrid(MPI.COMM_SELF, None)
    try:
        coll = Collectives(grid, "mpi", np)
        a = random_symmetric(np.random.default_rng(3), 20)
        results = []
        for loop in ("fused", "kernels"):
            coll.reset()
            c = DistMatrix.from_global(a.copy(), grid, 8)
            results.append(b"".join(x.tobytes() for x in sytrd(c, coll, loop=loop)))
            notes = coll.stats["other"].notes
            assert notes["column_loop"].startswith("host BLAS"), notes
            assert "launches_per_column" not in notes
        assert results[0] == results[1]
        with pytest.raises(ValueError, match="from its plan or as arguments, not both"):
            plan_for(DistMatrix.from_global(a.copy(), grid, 8), resolve(np, 20, 1, nb=8), sytrd_loop="fused")
    finally:
        grid.free()


def test_the_bench_times_a_row_per_loop():
    args = argparse.Namespace(method=["distributed"], reduction=["1stage"], sytrd_loop=["kernels", "fused"])
    assert _configurations(args) == [("distributed", "1stage", "kernels"), ("distributed", "1stage", "fused")]
    assert SYTRD_LOOPS == ("auto", "fused", "kernels") and plan.SYTRD_LOOPS is SYTRD_LOOPS
