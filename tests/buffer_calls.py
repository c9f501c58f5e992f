"""One call of each buffer method that hpcolls.Communicator wraps besides Allreduce, in each
form mpi4py takes (IN_PLACE, [buf, MPI.TYPE], [buf, count, MPI.TYPE], keywords, every root the
rank count allows at both ends), with numpy buffers of random data and poisoned outputs.

Shared by tests/mpi (the wrapped communicator against plain mpi4py, host buffers) and
tests/gpu/test_hpcolls_protocol_gpu.py (the same calls on device copies against plain mpi4py on host
copies). Importable from both because pytest puts tests/ (where conftest.py is) on sys.path.
"""
import numpy as np
from mpi4py import MPI

POISON = 77  # what every output starts as: an element the call did not write still holds it


def _random(rng, n, dtype):
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50, 50, n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


def buffer_calls(rank, size, seed):
    """{id: (method, args, kwargs)}: the same ids in the same order on every rank, each rank's
    own data (a function of seed and rank)."""
    rng = np.random.default_rng([seed, rank])
    k, f64 = 3, np.float64

    def data(n, dtype=f64):
        return _random(rng, n, dtype)

    def out(n, dtype=f64):
        return np.full(n, POISON, dtype=dtype)

    def mine(n, dtype=f64):
        """k*size elements, poisoned except this rank's block of k (an IN_PLACE input)."""
        a = out(n, dtype)
        a[rank * k:(rank + 1) * k] = data(k, dtype)
        return a

    counts = [1 + r % 3 for r in range(size)]
    c = {
        "Allgather": ("Allgather", (data(k), out(k * size)), {}),
        "Allgather-inplace": ("Allgather", (MPI.IN_PLACE, mine(k * size)), {}),
        "Allgather-type-spec": ("Allgather", ([data(k, np.int32), MPI.INT32_T], [out(k * size, np.int32), MPI.INT32_T]), {}),
        # the receive buffer is longer than the call: its tail must keep the poison
        "Allgather-count-spec": ("Allgather", ([data(k + 1), k, MPI.DOUBLE], [out(k * size + 2), k, MPI.DOUBLE]), {}),
        "Allgather-keywords": ("Allgather", (), {"recvbuf": out(k * size, np.float32), "sendbuf": data(k, np.float32)}),
        "Alltoall": ("Alltoall", (data(k * size, np.complex128), out(k * size, np.complex128)), {}),
        "Alltoall-inplace": ("Alltoall", (MPI.IN_PLACE, data(k * size, np.int64)), {}),
        "Reduce_scatter_block": ("Reduce_scatter_block", (data(k * size), out(k)), {}),
        "Reduce_scatter_block-max-int": ("Reduce_scatter_block", (data(k * size, np.int32), out(k, np.int32)), {"op": MPI.MAX}),
        "Reduce_scatter_block-inplace": ("Reduce_scatter_block", (MPI.IN_PLACE, data(k * size)), {}),
        "Reduce_scatter": ("Reduce_scatter", (data(sum(counts)), out(counts[rank]), counts, MPI.SUM), {}),
        "Reduce_scatter-no-counts": ("Reduce_scatter", (data(k * size, np.complex128), out(k, np.complex128)), {}),
        "Reduce_scatter-inplace": ("Reduce_scatter", (MPI.IN_PLACE, data(sum(counts))), {"recvcounts": counts, "op": MPI.PROD}),
        "Sendrecv": ("Sendrecv", (data(k), (rank + 1) % size, 5, out(k), (rank - 1) % size, 5), {}),
        "Sendrecv-keywords": ("Sendrecv", ([data(k), MPI.DOUBLE],), {"dest": (rank - 1) % size, "sendtag": 2,
                                                                     "recvbuf": [out(k + 1), k, MPI.DOUBLE],
                                                                     "source": (rank + 1) % size, "recvtag": 2}),
    }
    for root in sorted({0, size - 1}):
        at_root = rank == root
        c.update({
            f"Reduce-root{root}": ("Reduce", (data(k), out(k) if at_root else None, MPI.SUM, root), {}),
            f"Reduce-inplace-root{root}": ("Reduce", (MPI.IN_PLACE if at_root else data(k, np.int64),
                                                      data(k, np.int64) if at_root else None), {"op": MPI.MAX, "root": root}),
            f"Gather-root{root}": ("Gather", (data(k), out(k * size) if at_root else None, root), {}),
            f"Gather-inplace-root{root}": ("Gather", (MPI.IN_PLACE if at_root else data(k),
                                                      mine(k * size) if at_root else None), {"root": root}),
            f"Scatter-root{root}": ("Scatter", ([data(k * size), MPI.DOUBLE] if at_root else None, out(k)), {"root": root}),
            f"Scatter-inplace-root{root}": ("Scatter", (data(k * size) if at_root else None,
                                                        MPI.IN_PLACE if at_root else out(k), root), {}),
            f"Bcast-root{root}": ("Bcast", (data(k) if at_root else out(k), root), {}),
        })
    return c


def _replace(value, convert):
    if isinstance(value, np.ndarray):
        return convert(value)
    if isinstance(value, list) and value and isinstance(value[0], np.ndarray):
        return [convert(value[0]), *value[1:]]
    return value


def copy_call(args, kwargs, convert):
    """(args, kwargs, arrays): the call with every array (bare or first item of a spec) replaced
    by convert(array) (np.copy, cupy.asarray, ...), and those new arrays in argument order."""
    made = []

    def conv(a):
        made.append(convert(a))
        return made[-1]

    args = tuple(_replace(a, conv) for a in args)
    kwargs = {key: _replace(v, conv) for key, v in kwargs.items()}
    return args, kwargs, made


def complete(how, requests):
    """Completes every request of the list by `how`, one of COMPLETIONS."""
    if how == "Wait":
        for r in requests:
            r.Wait()
    elif how == "Test":
        for r in requests:
            while not r.Test():
                pass
    elif how == "Waitall":
        MPI.Request.Waitall(requests)
    elif how == "Testall":
        while not MPI.Request.Testall(requests):
            pass
    elif how in ("Waitany", "Testany"):
        left = list(requests)
        while any(r != MPI.REQUEST_NULL for r in left):
            if how == "Waitany":
                MPI.Request.Waitany(left)
            else:
                MPI.Request.Testany(left)
    elif how in ("Waitsome", "Testsome"):
        while any(r != MPI.REQUEST_NULL for r in requests):
            getattr(MPI.Request, how)(requests)
    elif how == "Get_status-then-Wait":
        for r in requests:
            while not r.Get_status():
                pass
            r.Wait()


COMPLETIONS = ["Wait", "Test", "Waitall", "Testall", "Waitany", "Testany", "Waitsome", "Testsome",
               "Get_status-then-Wait"]
