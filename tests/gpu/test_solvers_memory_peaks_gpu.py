"""solvers.bench.memory_peaks on the GPU (cupy's pool, through a MemoryHook), and bench --memory's line
for a two-stage solve. Skips where cupy or a GPU is missing."""
import re

import pytest
from mpi4py import MPI

from solver_gpu import cupy

from solvers.bench import sygvd as bench  # noqa: E402
from solvers.backend.collectives import create_collectives  # noqa: E402
from solvers.distributed.grid import ProcessGrid  # noqa: E402
from solvers.bench.memory_peaks import StagePeaks  # noqa: E402

MIB = 1 << 20


def test_stages_get_their_own_device_peaks_and_what_they_left():
    grid = ProcessGrid(MPI.COMM_SELF, None)
    coll = create_collectives(grid, "mpi", cupy)
    peaks = StagePeaks(cupy)
    with peaks.track(coll):
        with coll.stage("temporary"):
            cupy.ones(8 * MIB, dtype=cupy.uint8).sum()
        with coll.stage("kept"):
            kept = cupy.ones(2 * MIB, dtype=cupy.uint8)
    (t_peak, t_end), (k_peak, k_end) = peaks.stages["temporary"], peaks.stages["kept"]
    assert 8 * MIB <= t_peak < 9 * MIB and t_end < MIB / 4
    assert 2 * MIB <= k_peak < 3 * MIB and 2 * MIB <= k_end < 3 * MIB and kept.size
    assert not cupy.cuda.memory_hook.get_memory_hooks()        # the hook is gone after the block
    grid.free()


def test_bench_reports_device_peaks_per_stage(capsys):
    if MPI.COMM_WORLD.size != 1:
        pytest.skip("bench's one-rank row (its cuSOLVER peer runs beside it)")
    assert bench.main(["--n", "700", "--nb", "64", "--repeat", "1", "--warmup", "0",
                       "--reduction", "2stage", "--no-cusolvermp", "--memory"]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if "live memory per stage" in s)
    assert "rank 0's device:" in line and "sy2sb" in line and "ormtr_sb2st" in line
    peaks = [float(peak) for peak in re.findall(r"(\d+\.\d+)/\d+\.\d+", line)]
    assert all(0 <= p < 20 for p in peaks) and max(peaks) >= 1, line   # C alone is one matrix
