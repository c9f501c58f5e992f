"""The benchmark's kernel trace (hpcolls/tools/bench/kernel_trace.py) agrees across ranks: a failure on one
rank is an error on every rank, so none is left in a barrier the others skipped."""
import pytest

from hpcolls.tools.bench import kernel_trace


def test_a_failure_on_one_rank_raises_on_all(comm):
    last = comm.size - 1

    def fails_on_the_last_rank():
        if comm.rank == last:
            raise ValueError("planted")
        return comm.rank

    with pytest.raises(RuntimeError, match=rf"kernel trace, testing: rank {last}: ValueError: planted"):
        kernel_trace._agree(comm, "testing", fails_on_the_last_rank)
    assert kernel_trace._agree(comm, "testing", lambda: comm.rank * 2) == comm.rank * 2


def test_availability_is_the_same_on_every_rank(comm):
    ok, why = kernel_trace.available(comm)
    assert comm.allgather((ok, why)) == [(ok, why)] * comm.size
    assert ok or "torch.profiler is not importable" in why
