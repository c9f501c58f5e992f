"""AllReduce, Broadcast, Reduce, AllGather and ReduceScatter through NCCL (cupy's binding),
created lazily from the MPI communicator.

NCCL is the large-message path. It refuses two ranks on one GPU, so availability is decided
collectively from every rank's GPU UUID before anything is created; it has no complex types
(complex SUM travels as twice as many reals), no complex PROD and no 16-bit integers or bool (left
to MPI), and ReduceScatter with equal counts only. Broadcast and AllGather move bytes, any type.
MPI's in-place Reduce_scatter keeps the result at the receive buffer's start, where NCCL's in-place
ReduceScatter leaves it at the rank's own block: it is moved there on the stream.
"""
from .. import dtypes, log, native_module

_NCCL_TYPES = None


def _nccl():
    from cupy.cuda import nccl
    return nccl


def _type_table(nccl):
    global _NCCL_TYPES
    if _NCCL_TYPES is None:
        _NCCL_TYPES = {dtypes.F16: nccl.NCCL_FLOAT16, dtypes.F32: nccl.NCCL_FLOAT32,
                       dtypes.F64: nccl.NCCL_FLOAT64, dtypes.I32: nccl.NCCL_INT32,
                       dtypes.I64: nccl.NCCL_INT64, dtypes.U32: nccl.NCCL_UINT32,
                       dtypes.U64: nccl.NCCL_UINT64, dtypes.I8: nccl.NCCL_INT8, dtypes.U8: nccl.NCCL_UINT8}
        if hasattr(nccl, "NCCL_BFLOAT16"):
            _NCCL_TYPES[dtypes.BF16] = nccl.NCCL_BFLOAT16
    return _NCCL_TYPES


def _ops(nccl):
    return {dtypes.SUM: nccl.NCCL_SUM, dtypes.PROD: nccl.NCCL_PROD, dtypes.MIN: nccl.NCCL_MIN,
            dtypes.MAX: nccl.NCCL_MAX}


class NcclPath:
    """One NCCL communicator per hpcolls communicator (`comm`, on this rank's GPU `device`), or a
    recorded reason why there is none."""

    def __init__(self, comm, device):
        gpu_uuid = native_module.load().device_info(device)["uuid"]
        self.comm = None
        self.reason = None
        self.rank = comm.Get_rank()
        try:
            nccl = _nccl()
        except Exception as exc:  # noqa: BLE001 - any import failure means "no NCCL here"
            nccl, why = None, f"cupy.cuda.nccl unavailable ({exc.__class__.__name__}: {exc}); install hpcolls[cu13]"
        else:
            why = None
        uuids = comm.allgather(gpu_uuid)
        whys = comm.allgather(why)
        if any(whys):
            self.reason = next(w for w in whys if w)
        elif len(set(uuids)) != len(uuids):
            self.reason = "several ranks share a GPU, which NCCL refuses"
        if self.reason:
            log.info(f"NCCL path off: {self.reason}")
            return
        uid = nccl.get_unique_id() if comm.Get_rank() == 0 else None
        uid = comm.bcast(uid, root=0)
        self.comm = nccl.NcclCommunicator(comm.Get_size(), uid, comm.Get_rank())
        self.types = _type_table(nccl)   # dtype code -> NCCL type (no complex: see allreduce)
        self.ops = _ops(nccl)            # op code -> NCCL op
        log.info(f"NCCL path on: NCCL {nccl.get_version()} over {comm.Get_size()} ranks")

    def supports(self, code, op):
        if self.comm is None or op not in self.ops:  # NCCL has no bitwise or logical ops
            return False
        if code in dtypes.COMPLEX:
            return op == dtypes.SUM
        return code in self.types

    def takes(self, collective, call):
        """(whether NCCL makes this DeviceCall of `collective` (routes/collectives.py), why not)."""
        if self.comm is None:
            return False, self.reason
        if not collective.reduces:
            return True, None
        if not self.supports(call.code, call.op):
            return False, f"no {dtypes.NAMES[call.code]} {dtypes.OP_NAMES[call.op]}"
        if call.counts and len(set(call.counts)) > 1:
            return False, "ReduceScatter with counts that differ per rank"
        return True, None

    def _typed(self, call, count):
        """(count, NCCL type) of `count` elements of the call's type (complex: twice as many reals)."""
        if call.code in dtypes.COMPLEX:
            return 2 * count, self.types[dtypes.F32 if call.code == dtypes.C64 else dtypes.F64]
        return count, self.types[call.code]

    def allreduce(self, call, stream):
        self.comm.allReduce(call.send, call.recv, *self._typed(call, call.count), self.ops[call.op], stream)

    def bcast(self, call, stream):
        self.comm.broadcast(call.send, call.recv, call.count, self.types[dtypes.U8], call.root, stream)

    def reduce(self, call, stream):
        self.comm.reduce(call.send, call.recv, *self._typed(call, call.count), self.ops[call.op], call.root, stream)

    def allgather(self, call, stream):
        self.comm.allGather(call.send, call.recv, call.count, self.types[dtypes.U8], stream)

    def reduce_scatter(self, call, stream):
        count, rank = call.counts[0], self.rank
        if not call.in_place:
            self.comm.reduceScatter(call.send, call.recv, *self._typed(call, count), self.ops[call.op], stream)
            return
        block = count * dtypes.ITEMSIZE[call.code]
        self.comm.reduceScatter(call.recv, call.recv + rank * block, *self._typed(call, count), self.ops[call.op],
                                stream)
        if rank and block:
            native_module.load().memcpy_async(call.recv, call.recv + rank * block, block, stream)

    def destroy(self):
        if self.comm is not None:
            self.comm.destroy()
            self.comm = None


def nccl_communicator(comm, device):
    """(cupy.cuda.nccl.NcclCommunicator over mpi4py ``comm``'s ranks on GPU ``device``, None), made
    as hpcolls' own NCCL route makes it, or (None, why NCCL cannot run here: no cupy NCCL, ranks
    sharing a GPU). Collective over ``comm``; for libraries that take an NCCL communicator (the
    solver's cuSOLVERMp baseline). The caller destroys it."""
    path = NcclPath(comm, device)
    return path.comm, path.reason
