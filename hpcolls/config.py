"""Run-time settings of a communicator, read once from the settings registry (hpcolls/settings.py,
which also documents every variable), and the selection table.
"""
from dataclasses import dataclass

from . import settings

ALGOS = settings.ALGOS
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

    staging: str = "pinned"  # HPCOLLS_STAGING
    node_size: int = 0       # HPCOLLS_NODE_SIZE (0: nodes as MPI sees them)
    hierarchy: str = "auto"  # HPCOLLS_HIERARCHY

    @classmethod
    def from_env(cls, nranks, algo=None, timeout=None, validate=None):
        """Settings from the environment; explicit arguments (not None) override it."""
        algo = settings.get("HPCOLLS_ALGO") if algo is None else settings.get("HPCOLLS_ALGO", {"HPCOLLS_ALGO": algo})
        one, two = thresholds(nranks)
        timeout = settings.get("HPCOLLS_TIMEOUT") if timeout is None else float(timeout)
        if timeout <= 0:
            raise ValueError("hpcolls: HPCOLLS_TIMEOUT/timeout must be a positive number of seconds")
        scratch = settings.get("HPCOLLS_SCRATCH_BYTES")
        if scratch > MAX_SCRATCH_BYTES:
            raise ValueError(f"hpcolls: HPCOLLS_SCRATCH_BYTES={scratch} is over the {MAX_SCRATCH_BYTES >> 30} GiB "
                             "the kernels can index (a few MiB is enough: larger messages go to NCCL)")
        ll_mode = settings.get("HPCOLLS_LL_MODE")
        if ll_mode >= LL_MODES:
            raise ValueError(f"hpcolls: HPCOLLS_LL_MODE={ll_mode} is not one of 0..{LL_MODES - 1}")
        threads = settings.get("HPCOLLS_THREADS_PER_BLOCK")
        if threads and (threads > 1024 or threads % 32):
            # One-shot's lanes of a chunk share a warp, and its loops are warp-uniform.
            raise ValueError(f"hpcolls: HPCOLLS_THREADS_PER_BLOCK={threads} is not a multiple of 32 up to 1024")
        one_set, two_set = settings.get("HPCOLLS_ONESHOT_MAX_BYTES"), settings.get("HPCOLLS_TWOSHOT_MAX_BYTES")
        return cls(algo=algo,
                   oneshot_max_bytes=one if one_set is None else one_set,
                   twoshot_max_bytes=two if two_set is None else two_set,
                   scratch_bytes=scratch,
                   ll_mode=ll_mode,
                   threads_per_block=threads,
                   dependent_launch=settings.get("HPCOLLS_DEPENDENT_LAUNCH") != 0,
                   timeout_s=timeout,
                   validate=settings.get("HPCOLLS_VALIDATE") if validate is None else bool(validate),
                   staging=settings.get("HPCOLLS_STAGING"),
                   node_size=settings.get("HPCOLLS_NODE_SIZE"),
                   hierarchy=settings.get("HPCOLLS_HIERARCHY"))
