"""mpi4py's own buffer calls that no communicator method sees (MPI.Message.Recv/Irecv,
Datatype.Pack/Unpack/Pack_external/Unpack_external, Op.Reduce_local), made on every rank with
several dtypes and sizes (0, 1, odd, large), outputs poisoned first; prints one digest line per
rank of every output byte and every receive's status, so that runs can be compared bitwise
(`records` gives them one by one, labelled: tests/gpu/test_hpcolls_pmpi_staging_gpu.py compares cupy
arrays' with host arrays' so).

    mpiexec -n 3 python tests/pmpi_staging_calls.py [--buffers host|pretend-device]

--buffers pretend-device puts every buffer these calls read or write in memory mapped with no
access, which hpcolls' PMPI staging library (LD_PRELOAD) is told to treat as device memory
(hpcolls_pmpi_staging_pretend_device): MPI touching it crashes the process as a device pointer
would on an MPI that is not CUDA-aware, so the same digest as with host buffers shows that the
library staged every buffer and copied the right bytes back. tests/cpu/test_hpcolls_pmpi_staging.py runs it.
"""
import argparse
import ctypes
import hashlib
import mmap

import numpy as np
from mpi4py import MPI
from mpi4py.util.dtlib import from_numpy_dtype

DTYPES = ("i1", "i4", "f8", "c16")
SIZES = (0, 1, 7, 4099)
POISON = 0xA5
PROT_NONE, PROT_READ_WRITE = 0, 3


class HostBuffers:
    def array(self, count, dtype):
        return np.full(count, 0, dtype)

    def write(self, array, values):
        array[...] = values

    def read(self, array):
        return array.tobytes()

    def poison(self, array):
        array.view(np.uint8)[...] = POISON


class CupyBuffers(HostBuffers):
    """cupy arrays on the current GPU; every write is synchronized before MPI sees the array, as
    mpi4py requires of device buffers."""

    def __init__(self, cupy):
        self.cupy = cupy

    def array(self, count, dtype):
        return self.cupy.zeros(count, dtype)

    def write(self, array, values):
        array[...] = self.cupy.asarray(values)
        self.cupy.cuda.Device().synchronize()

    def read(self, array):
        return self.cupy.asnumpy(array).tobytes()

    def poison(self, array):
        array.view(self.cupy.uint8)[...] = POISON
        self.cupy.cuda.Device().synchronize()


class PretendDeviceBuffers(HostBuffers):
    """Arrays carved from one mapping with no access, registered with the staging library."""

    def __init__(self, nbytes=1 << 24):
        self.map = mmap.mmap(-1, nbytes)
        self.base = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        self.nbytes, self.used = nbytes, 0
        self.libc = ctypes.CDLL(None, use_errno=True)
        ctypes.CDLL(None).hpcolls_pmpi_staging_pretend_device(ctypes.c_void_p(self.base), ctypes.c_size_t(nbytes))
        self._protect(PROT_NONE)

    def _protect(self, prot):
        if self.libc.mprotect(ctypes.c_void_p(self.base), ctypes.c_size_t(self.nbytes), prot) != 0:
            raise OSError(ctypes.get_errno(), "mprotect")

    def array(self, count, dtype):
        dtype = np.dtype(dtype)
        offset = (self.used + 63) // 64 * 64 + 64  # an odd neighbour for every buffer
        self.used = offset + count * dtype.itemsize
        assert self.used <= self.nbytes
        return np.frombuffer(self.map, dtype=dtype, count=count, offset=offset)

    def _open(self, action):
        self._protect(PROT_READ_WRITE)
        try:
            return action()
        finally:
            self._protect(PROT_NONE)

    def write(self, array, values):
        self._open(lambda: array.__setitem__(Ellipsis, values))

    def read(self, array):
        return self._open(array.tobytes)

    def poison(self, array):
        self._open(lambda: array.view(np.uint8).__setitem__(Ellipsis, POISON))


def values(count, dtype, seed):
    rng = np.random.default_rng(seed)
    raw = rng.integers(-100, 100, size=(count, 2))
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return (raw[:, 0] + 1j * raw[:, 1]).astype(dtype)
    return raw[:, 0].astype(dtype)


def status_bytes(status, mpitype):
    return repr((status.Get_source(), status.Get_tag(), status.Get_count(mpitype))).encode()


def records(buffers, comm):
    """[(label, bytes)]: every output of every call, in order (collective over comm)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    out = []
    right, left = (rank + 1) % size, (rank - 1) % size
    for d, dtype in enumerate(DTYPES):
        mpitype = from_numpy_dtype(dtype)
        for count in SIZES:
            seed = 1000 * rank + 10 * d + count
            data = buffers.array(count, dtype)
            buffers.write(data, values(count, dtype, seed))
            # Pack into one buffer twice: the elements, then (at the position the first returned)
            # every other element through a vector type, one of which spans the array (mpi4py packs
            # as many as the buffer holds); Unpack both back into poisoned arrays: the vector's
            # gaps must stay poisoned.
            packed = buffers.array(2 * mpitype.Pack_size(count, comm) + 64, "u1")
            buffers.poison(packed)
            position = mpitype.Pack(data, packed, 0, comm)
            vector = mpitype.Create_vector(count // 2, 1, 2).Commit() if count >= 2 else None
            if vector is not None:
                position = vector.Pack(data, packed, position, comm)
            out.append((f"{dtype} x{count} Pack", buffers.read(packed)[:position]))
            unpacked, unpacked_vector = buffers.array(count, dtype), buffers.array(count, dtype)
            buffers.poison(unpacked)
            buffers.poison(unpacked_vector)
            position = mpitype.Unpack(packed, 0, unpacked, comm)
            if vector is not None:
                vector.Unpack(packed, position, unpacked_vector, comm)
                vector.Free()
            out.append((f"{dtype} x{count} Unpack", buffers.read(unpacked) + buffers.read(unpacked_vector)))
            # external32, whose bytes every MPI library writes alike.
            external = buffers.array(mpitype.Pack_external_size("external32", count) + 16, "u1")
            buffers.poison(external)
            position = mpitype.Pack_external("external32", data, external, 0)
            back = buffers.array(count, dtype)
            buffers.poison(back)
            mpitype.Unpack_external("external32", external, 0, back)
            out.append((f"{dtype} x{count} Pack_external/Unpack_external",
                        buffers.read(external) + buffers.read(back) + str(position).encode()))
            # Matched receives, each of a message 3 elements shorter than its buffer: the tail must
            # stay poisoned. Message.Probe (mpi4py's own Message) then Recv; comm.Mprobe then
            # Irecv + Wait; comm.Improbe until matched, then Recv.
            for way in ("probe_recv", "mprobe_irecv", "improbe_recv"):
                tag = 7 + SIZES.index(count)
                received = buffers.array(count + 3, dtype)
                buffers.poison(received)
                # The send is the communicator's (not what is tested): from host memory.
                outgoing = np.frombuffer(buffers.read(data), dtype=dtype)
                request = comm.Isend([outgoing, count, mpitype], dest=right, tag=tag)
                status = MPI.Status()
                if way == "probe_recv":
                    MPI.Message.Probe(comm, source=left, tag=tag).Recv([received, count + 3, mpitype], status)
                elif way == "mprobe_irecv":
                    comm.Mprobe(source=left, tag=tag).Irecv([received, count + 3, mpitype]).Wait(status)
                else:
                    message = None
                    while message is None:
                        message = comm.Improbe(source=left, tag=tag)
                    message.Recv([received, count + 3, mpitype], status)
                request.Wait()
                out.append((f"{dtype} x{count} {way}", buffers.read(received) + status_bytes(status, mpitype)))
            # Op.Reduce_local: SUM for every type, MAX where it is defined.
            for name, op in (("SUM", MPI.SUM), ("MAX", MPI.MAX))[:1 if np.dtype(dtype).kind == "c" else 2]:
                inout = buffers.array(count, dtype)
                buffers.write(inout, values(count, dtype, seed + 1))
                op.Reduce_local(data, inout)
                out.append((f"{dtype} x{count} Reduce_local {name}", buffers.read(inout)))
    return out


def digest(outputs):
    h = hashlib.sha256()
    for label, data in outputs:
        h.update(label.encode() + data)
    return h.hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buffers", choices=("host", "pretend-device"), default="host")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    buffers = PretendDeviceBuffers() if args.buffers == "pretend-device" else HostBuffers()
    line = f"digest {digest(records(buffers, comm))}"
    library = ctypes.CDLL(None)
    if hasattr(library, "hpcolls_pmpi_staging_calls"):
        library.hpcolls_pmpi_staging_calls.restype = ctypes.c_ulonglong
        calls = library.hpcolls_pmpi_staging_calls()
    else:
        calls = "not preloaded"
    for rank, text in enumerate(comm.gather(f"{line} calls {calls}", root=0) or []):
        print(f"rank {rank}: {text}", flush=True)


if __name__ == "__main__":
    main()
