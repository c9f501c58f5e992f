"""HPCOLLS_VALIDATE (validate=True): a collective whose ranks disagree on count, datatype, op,
root or method raises ValidationError on every rank, with host buffers too, instead of hanging
or giving each rank another result; calls that agree go on as plain mpi4py's do.

tests/run.sh runs this at 1, 2 and 4 ranks; tests/cpu/test_hpcolls_validation_3ranks.py runs it at 3
under a time-out (a hang fails it)."""
import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from buffer_calls import buffer_calls, copy_call
from hpcolls.errors import ValidationError

WORLD = MPI.COMM_WORLD
needs_two = pytest.mark.skipif(WORLD.size < 2, reason="a disagreement needs two ranks")


@pytest.fixture
def checked(comm):
    c = hpcolls.wrap(comm, validate=True)
    yield c
    c.close()


def _odd_one(comm, usual, other):
    return other if comm.rank == comm.size - 1 else usual


MISMATCHES = {  # name -> (what the message names, call(comm, wrapped))
    "count": ("count=", lambda c, w: w.Allreduce(np.ones(_odd_one(c, 4, 5)), np.zeros(_odd_one(c, 4, 5)))),
    "datatype": ("MPI_FLOAT", lambda c, w: w.Allreduce(MPI.IN_PLACE, np.ones(4, _odd_one(c, np.float64, np.float32)))),
    "op": ("op=MAX", lambda c, w: w.Allreduce(MPI.IN_PLACE, np.ones(4), op=_odd_one(c, MPI.SUM, MPI.MAX))),
    "root": ("root=", lambda c, w: w.Bcast(np.ones(3), root=_odd_one(c, 0, 1))),
    "method": ("method=", lambda c, w: w.Bcast(np.ones(3)) if c.rank else w.Reduce(np.ones(3), np.ones(3))),
    "gather-count": ("count=", lambda c, w: w.Gather(np.ones(_odd_one(c, 2, 3)), np.zeros(3 * c.size))),
    "scan-datatype": ("MPI_INT", lambda c, w: w.Scan(np.ones(2, _odd_one(c, np.int64, np.int32)),
                                                     np.zeros(2, _odd_one(c, np.int64, np.int32)))),
    "reduce_scatter-counts": ("recvcounts=", lambda c, w: w.Reduce_scatter(
        np.ones(2 * c.size), np.zeros(2), recvcounts=_odd_one(c, [2] * c.size, [2] * (c.size - 1) + [1]))),
    "nonblocking-op": ("op=PROD", lambda c, w: w.Iallreduce(np.ones(2), np.zeros(2), op=_odd_one(c, MPI.SUM, MPI.PROD)).Wait()),
    "vector-root": ("root=", lambda c, w: w.Gatherv(np.ones(1), [np.zeros(c.size), [1] * c.size], root=_odd_one(c, 0, 1))),
}


@needs_two
@pytest.mark.parametrize("case", list(MISMATCHES))
def test_a_disagreement_raises_on_every_rank(comm, checked, case):
    names, call = MISMATCHES[case]
    with pytest.raises(ValidationError, match=f"ranks disagree.*{names}") as error:
        call(comm, checked)
    assert f"rank {comm.size - 1}:" in str(error.value) or case == "method"
    # Every rank raised before communicating: the communicator still works.
    assert checked.allreduce(1) == comm.size


@pytest.fixture
def seed(comm):
    return comm.bcast(int(np.random.SeedSequence().entropy % 2**63))


def test_agreeing_calls_of_every_form_pass_and_match_mpi4py(comm, checked, seed):
    for case, (name, args, kwargs) in buffer_calls(comm.rank, comm.size, seed).items():
        plain_args, plain_kwargs, want = copy_call(args, kwargs, np.copy)
        checked_args, checked_kwargs, got = copy_call(args, kwargs, np.copy)
        getattr(comm, name)(*plain_args, **plain_kwargs)
        getattr(checked, name)(*checked_args, **checked_kwargs)
        assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want)), case


def test_vector_counts_may_differ_per_rank(comm, checked):
    counts = [1 + r for r in range(comm.size)]
    mine = np.full(counts[comm.rank], float(comm.rank))
    out = np.zeros(sum(counts))
    checked.Allgatherv(mine, [out, counts])
    assert np.array_equal(out, np.repeat(np.arange(comm.size, dtype=float), counts))

