"""AllReduce through NCCL (cupy's binding), created lazily from the MPI communicator.

NCCL is the large-message path. It refuses two ranks on one GPU, so availability is decided
collectively from every rank's GPU UUID before anything is created; it has no complex types
(complex SUM travels as twice as many reals) and no complex PROD (left to MPI).
"""
from .. import dtypes, log

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
                       dtypes.U64: nccl.NCCL_UINT64}
        if hasattr(nccl, "NCCL_BFLOAT16"):
            _NCCL_TYPES[dtypes.BF16] = nccl.NCCL_BFLOAT16
    return _NCCL_TYPES


def _ops(nccl):
    return {dtypes.SUM: nccl.NCCL_SUM, dtypes.PROD: nccl.NCCL_PROD, dtypes.MIN: nccl.NCCL_MIN,
            dtypes.MAX: nccl.NCCL_MAX}


class NcclPath:
    """One NCCL communicator per hpcolls communicator, or a recorded reason why there is none."""

    def __init__(self, comm, gpu_uuid):
        self.comm = None
        self.reason = None
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

    def allreduce(self, send, recv, op, stream):
        code, count = recv.code, recv.count
        if code in dtypes.COMPLEX:  # SUM of complex == SUM of its real and imaginary parts
            code, count = (dtypes.F32 if code == dtypes.C64 else dtypes.F64), 2 * count
        src = recv.ptr if send is None else send.ptr
        self.comm.allReduce(src, recv.ptr, count, self.types[code], self.ops[op], stream)

    def destroy(self):
        if self.comm is not None:
            self.comm.destroy()
            self.comm = None
