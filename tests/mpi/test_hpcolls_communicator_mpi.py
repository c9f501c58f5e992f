"""hpcolls.Communicator as a drop-in for an mpi4py communicator, with host (numpy) buffers:
every call must give exactly what plain mpi4py gives, and everything else must forward."""
import numpy as np
import pytest
from mpi4py import MPI

import hpcolls

OPS = [MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX]
TYPES = [np.float64, np.float32, np.int32, np.int64, np.complex128]


@pytest.fixture
def wrapped(comm):
    c = hpcolls.wrap(comm)
    yield c
    c.close()


def local_data(comm, dtype, n, seed):
    rng = np.random.default_rng([seed, comm.rank])
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-50, 50, n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


@pytest.fixture
def seed(comm):
    return comm.bcast(int(np.random.SeedSequence().entropy % 2**63))


# MPI defines no MIN/MAX for complex numbers: those pairs are not cases.
CASES = [(t, o, f"{np.dtype(t).name}-{name}") for t in TYPES for o, name in zip(OPS, ("sum", "prod", "min", "max"))
         if not (np.dtype(t).kind == "c" and o in (MPI.MIN, MPI.MAX))]


@pytest.mark.parametrize("dtype,op", [c[:2] for c in CASES], ids=[c[2] for c in CASES])
def test_allreduce_matches_mpi4py(comm, wrapped, seed, dtype, op):
    x = local_data(comm, dtype, 37, seed)
    want = np.full_like(x, 7)
    got = np.full_like(x, 9)  # poisoned: a differing value must come from the call
    comm.Allreduce(x, want, op=op)
    wrapped.Allreduce(x, got, op=op)
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    inplace = x.copy()
    wrapped.Allreduce(MPI.IN_PLACE, inplace, op=op)
    assert np.array_equal(inplace.view(np.uint8), want.view(np.uint8))


def test_buffer_specs_match_mpi4py(comm, wrapped, seed):
    x = local_data(comm, np.float64, 10, seed)
    want = np.empty(10)
    comm.Allreduce([x, MPI.DOUBLE], [want, MPI.DOUBLE], op=MPI.SUM)
    got = np.zeros(12)
    wrapped.Allreduce([x, 10, MPI.DOUBLE], [got, 10, MPI.DOUBLE], op=MPI.SUM)
    assert np.array_equal(got[:10], want) and np.all(got[10:] == 0)


def test_mpi4py_errors_pass_through_unchanged(comm, wrapped):
    with pytest.raises(Exception) as plain:
        comm.Allreduce(np.zeros(3), np.zeros(4), op=MPI.SUM)
    with pytest.raises(type(plain.value)):
        wrapped.Allreduce(np.zeros(3), np.zeros(4), op=MPI.SUM)


def test_everything_else_forwards(comm, wrapped):
    assert wrapped.Get_rank() == comm.Get_rank() and wrapped.rank == comm.rank
    assert wrapped.Get_size() == comm.size
    assert wrapped == comm and wrapped.mpi is comm
    assert wrapped.allreduce(comm.rank) == sum(range(comm.size))      # lower case: objects
    assert wrapped.bcast({"k": comm.rank}, root=0) == {"k": 0}
    buf = np.arange(4.0) if comm.rank == 0 else np.zeros(4)
    wrapped.Bcast(buf, root=0)
    assert np.array_equal(buf, np.arange(4.0))
    wrapped.Barrier()
    assert repr(wrapped).startswith("<hpcolls.Communicator rank")


def test_dup_and_split_return_wrapped_communicators(comm, wrapped):
    dup = wrapped.Dup()
    assert isinstance(dup, hpcolls.Communicator) and dup.Get_size() == comm.size
    half = wrapped.Split(comm.rank % 2, comm.rank)
    assert isinstance(half, hpcolls.Communicator)
    x = np.array([1.0])
    half.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
    assert x[0] == len(range(comm.rank % 2, comm.size, 2))
    node = wrapped.Split_type(MPI.COMM_TYPE_SHARED)
    assert isinstance(node, hpcolls.Communicator)
    for c in (dup, half, node):
        c.Free()


def test_split_with_undefined_color_gives_comm_null(comm, wrapped):
    part = wrapped.Split(MPI.UNDEFINED if comm.rank == 0 else 1, 0)
    if comm.rank == 0:
        assert part == MPI.COMM_NULL
    else:
        assert isinstance(part, hpcolls.Communicator)
        part.Free()


def test_wrapping_twice_wraps_the_mpi_communicator(comm, wrapped):
    again = hpcolls.Communicator(wrapped)
    assert again.mpi is comm


def test_malformed_host_spec_raises_as_mpi4py_does(comm, wrapped):
    # A host spec reaches mpi4py unchanged: its error, raised locally on every rank before any
    # communication, so no rank is left waiting in a collective.
    with pytest.raises(Exception) as plain:
        comm.Allreduce(np.zeros(2), [np.zeros(2), 2, "double"], op=MPI.SUM)
    with pytest.raises(type(plain.value), match="double"):
        wrapped.Allreduce(np.zeros(2), [np.zeros(2), 2, "double"], op=MPI.SUM)
