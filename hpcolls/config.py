"""Run-time settings from the environment, read once per communicator, and the selection table.

| variable | meaning | default |
| --- | --- | --- |
| HPCOLLS_ALGO | auto, oneshot, twoshot, nccl or mpi | auto |
| HPCOLLS_ONESHOT_MAX_BYTES | largest message for one-shot (auto) | from SELECTION_TABLE |
| HPCOLLS_TWOSHOT_MAX_BYTES | largest message for two-shot (auto); above: NCCL, else the native kernels in pieces | from SELECTION_TABLE |
| HPCOLLS_SCRATCH_BYTES | LL scratch per rank per communicator, both halves | 8 MiB |
| HPCOLLS_TIMEOUT | seconds a kernel waits for a peer before failing the call | 10 |
| HPCOLLS_VALIDATE | 1: check on every call that all ranks agree on count, dtype, op | 0 |
| HPCOLLS_DEBUG | WARN, INFO or TRACE (see hpcolls.log) | WARN |
| HPCOLLS_MPI_CUDA_AWARE | 0/1: override detection of a CUDA-aware MPI | detected |
| HPCOLLS_LL_MODE | diagnosis: LL store/poll variant 0..3 (native/include/hpcolls/ll_line.cuh); not 0 keeps small calls on the general one-shot kernel | 0 |
| HPCOLLS_DEPENDENT_LAUNCH | 0: launch each kernel after the one before it on the stream has ended, not as its programmatic dependent (Hopper+; on by default, see docs/PERFORMANCE.md) | 1 |
| HPCOLLS_THREADS_PER_BLOCK | diagnosis: kernel block size, whole warps (32..1024; capped at what a kernel can run); set, it keeps small calls on the general one-shot kernel | chosen per call (0) |
"""
import os
from dataclasses import dataclass

ALGOS = ("auto", "oneshot", "twoshot", "nccl", "mpi")
# As native/include/hpcolls/types.h: LL variants the kernels are built for, and the scratch the
# kernels' 32-bit offsets can index.
LL_MODES = 4
MAX_SCRATCH_BYTES = 8 << 30

# The one selection table: per maximum rank count, the largest message (bytes) for one-shot and
# for two-shot under HPCOLLS_ALGO=auto. Larger messages go to NCCL when it can run, else through
# the native kernels in pieces of the largest message they take (communicator.py). The native
# path also stops where the scratch budget does (one-shot: scratch/4/N bytes). Rows are (max
# ranks, oneshot max, twoshot max). The 2-, 4- and 8-rank crossovers were measured on one H200
# with the ranks sharing it (docs/PERFORMANCE.md, "Device time per size"), where one-shot's small-
# message kernel runs up to SMs / ranks blocks of 4 KiB; the last row is not measured.
SELECTION_TABLE = (
    (2, 256 << 10, 1 << 20),
    (4, 128 << 10, 1 << 20),
    (8, 64 << 10, 1 << 20),
    (32, 16 << 10, 1 << 20),
)


def thresholds(nranks):
    for max_ranks, oneshot_max, twoshot_max in SELECTION_TABLE:
        if nranks <= max_ranks:
            return oneshot_max, twoshot_max
    return SELECTION_TABLE[-1][1:]


def _int_env(name, default):
    text = os.environ.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(float(text))
    except ValueError:
        raise ValueError(f"hpcolls: {name}={text!r} is not a number") from None
    if value < 0:
        raise ValueError(f"hpcolls: {name} must be >= 0, not {value}")
    return value


@dataclass(frozen=True)
class Config:
    algo: str
    oneshot_max_bytes: int
    twoshot_max_bytes: int
    scratch_bytes: int
    timeout_s: float
    validate: bool
    ll_mode: int = 0
    threads_per_block: int = 0  # 0: the native layer chooses per call
    dependent_launch: bool = True  # where the GPU has it (compute capability 9.0+); HPCOLLS_DEPENDENT_LAUNCH=0: off

    @classmethod
    def from_env(cls, nranks, algo=None, timeout=None, validate=None):
        """Settings from the environment; explicit arguments (not None) override it."""
        algo = (algo or os.environ.get("HPCOLLS_ALGO") or "auto").strip().lower()
        if algo not in ALGOS:
            raise ValueError(f"hpcolls: HPCOLLS_ALGO/algo={algo!r} is not one of {', '.join(ALGOS)}")
        one, two = thresholds(nranks)
        timeout = float(timeout if timeout is not None else os.environ.get("HPCOLLS_TIMEOUT") or 10.0)
        if timeout <= 0:
            raise ValueError("hpcolls: HPCOLLS_TIMEOUT must be a positive number of seconds")
        scratch = _int_env("HPCOLLS_SCRATCH_BYTES", 8 << 20)
        if scratch > MAX_SCRATCH_BYTES:
            raise ValueError(f"hpcolls: HPCOLLS_SCRATCH_BYTES={scratch} is over the {MAX_SCRATCH_BYTES >> 30} GiB "
                             "the kernels can index (a few MiB is enough: larger messages go to NCCL)")
        ll_mode = _int_env("HPCOLLS_LL_MODE", 0)
        if ll_mode >= LL_MODES:
            raise ValueError(f"hpcolls: HPCOLLS_LL_MODE={ll_mode} is not one of 0..{LL_MODES - 1}")
        threads = _int_env("HPCOLLS_THREADS_PER_BLOCK", 0)
        if threads and (threads > 1024 or threads % 32):
            # One-shot's lanes of a chunk share a warp, and its loops are warp-uniform.
            raise ValueError(f"hpcolls: HPCOLLS_THREADS_PER_BLOCK={threads} is not a multiple of 32 up to 1024")
        return cls(algo=algo,
                   oneshot_max_bytes=_int_env("HPCOLLS_ONESHOT_MAX_BYTES", one),
                   twoshot_max_bytes=_int_env("HPCOLLS_TWOSHOT_MAX_BYTES", two),
                   scratch_bytes=scratch,
                   ll_mode=ll_mode,
                   threads_per_block=threads,
                   dependent_launch=_int_env("HPCOLLS_DEPENDENT_LAUNCH", 1) != 0,
                   timeout_s=timeout,
                   validate=(os.environ.get("HPCOLLS_VALIDATE", "0") not in ("", "0")
                             if validate is None else bool(validate)))
