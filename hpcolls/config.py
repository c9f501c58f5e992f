"""Run-time settings of a communicator, read once from the settings registry (hpcolls/settings.py,
which also documents every variable), and the selection table as the native plan has it.
"""
from dataclasses import dataclass

from . import native_module, settings

ALGOS = settings.ALGOS
# As native/include/hpcolls/types.h: LL variants the kernels are built for, and the scratch the
# kernels' 32-bit offsets can index.
LL_MODES = 4
MAX_SCRATCH_BYTES = 8 << 30

PROTOCOLS = settings.PROTOCOLS


def selection_table():
    """The one selection table, the native plan's own (native/hpcolls/plan.cpp, read through
    hpcolls._native.selection_table): a dict per row of collective, max_ranks and byte limits
    (None: no limit); () where the native module is not built."""
    try:
        native = native_module.load()
    except native_module.NativeModuleMissing:
        return ()
    return tuple(native.selection_table())


def thresholds(nranks):
    """Allreduce's LL one-shot limit and the native path's limit on a whole Allreduce where NCCL is
    the alternative, at `nranks` ranks, from the plan's table (None: no limit); (None, None) where
    the native module is not built."""
    rows = [r for r in selection_table() if r["collective"] == "allreduce"]
    for row in rows:
        if nranks <= row["max_ranks"]:
            return row["ll_oneshot_max"], row["native_max_vs_nccl"]
    return (rows[-1]["ll_oneshot_max"], rows[-1]["native_max_vs_nccl"]) if rows else (None, None)


@dataclass(frozen=True)
class Config:
    algo: str
    oneshot_max_bytes: object  # int, or None: the plan's selection table decides
    twoshot_max_bytes: object
    scratch_bytes: int
    timeout_s: float
    validate: bool
    ll_mode: int = 0
    threads_per_block: int = 0  # 0: the native layer chooses per call
    dependent_launch: bool = True  # where the GPU has it (compute capability 9.0+); HPCOLLS_DEPENDENT_LAUNCH=0: off

    staging: str = "pinned"  # HPCOLLS_STAGING
    node_size: int = 0       # HPCOLLS_NODE_SIZE (0: nodes as MPI sees them)
    hierarchy: str = "auto"  # HPCOLLS_HIERARCHY
    protocol: str = "auto"   # HPCOLLS_PROTOCOL
    sentinel_scratch_bytes: int = 0  # HPCOLLS_SENTINEL_SCRATCH_BYTES (0: the protocol off)
    ll128_scratch_bytes: int = 0     # HPCOLLS_LL128_SCRATCH_BYTES
    ll128_probe_ms: int = 0          # HPCOLLS_LL128_PROBE_MS (0: no probe, LL128 off)
    tune_file: str = ""              # HPCOLLS_TUNE_FILE (hpcolls/tuned_table.py: "" the per-user cache)

    @classmethod
    def from_env(cls, nranks, algo=None, timeout=None, validate=None):
        """Settings from the environment; explicit arguments (not None) override it."""
        algo = settings.get("HPCOLLS_ALGO") if algo is None else settings.get("HPCOLLS_ALGO", {"HPCOLLS_ALGO": algo})
        timeout = settings.get("HPCOLLS_TIMEOUT") if timeout is None else float(timeout)
        if timeout <= 0:
            raise ValueError("hpcolls: HPCOLLS_TIMEOUT/timeout must be a positive number of seconds")
        scratch = settings.get("HPCOLLS_SCRATCH_BYTES")
        if scratch > MAX_SCRATCH_BYTES:
            raise ValueError(f"hpcolls: HPCOLLS_SCRATCH_BYTES={scratch} is over the {MAX_SCRATCH_BYTES >> 30} GiB "
                             "the kernels can index (a few MiB is enough: larger messages go to NCCL)")
        regions = {name: settings.get(name) for name in ("HPCOLLS_SENTINEL_SCRATCH_BYTES", "HPCOLLS_LL128_SCRATCH_BYTES")}
        for name, size in regions.items():
            if size > MAX_SCRATCH_BYTES:
                raise ValueError(f"hpcolls: {name}={size} is over the {MAX_SCRATCH_BYTES >> 30} GiB the kernels "
                                 "can index")
        ll_mode = settings.get("HPCOLLS_LL_MODE")
        if ll_mode >= LL_MODES:
            raise ValueError(f"hpcolls: HPCOLLS_LL_MODE={ll_mode} is not one of 0..{LL_MODES - 1}")
        threads = settings.get("HPCOLLS_THREADS_PER_BLOCK")
        if threads and (threads > 1024 or threads % 32):
            # One-shot's lanes of a chunk share a warp, and its loops are warp-uniform.
            raise ValueError(f"hpcolls: HPCOLLS_THREADS_PER_BLOCK={threads} is not a multiple of 32 up to 1024")
        one_set, two_set = settings.get("HPCOLLS_ONESHOT_MAX_BYTES"), settings.get("HPCOLLS_TWOSHOT_MAX_BYTES")
        return cls(algo=algo,
                   oneshot_max_bytes=one_set,
                   twoshot_max_bytes=two_set,
                   protocol=settings.get("HPCOLLS_PROTOCOL"),
                   sentinel_scratch_bytes=regions["HPCOLLS_SENTINEL_SCRATCH_BYTES"],
                   ll128_scratch_bytes=regions["HPCOLLS_LL128_SCRATCH_BYTES"],
                   ll128_probe_ms=settings.get("HPCOLLS_LL128_PROBE_MS"),
                   scratch_bytes=scratch,
                   ll_mode=ll_mode,
                   threads_per_block=threads,
                   dependent_launch=settings.get("HPCOLLS_DEPENDENT_LAUNCH") != 0,
                   timeout_s=timeout,
                   validate=settings.get("HPCOLLS_VALIDATE") if validate is None else bool(validate),
                   staging=settings.get("HPCOLLS_STAGING"),
                   node_size=settings.get("HPCOLLS_NODE_SIZE"),
                   hierarchy=settings.get("HPCOLLS_HIERARCHY"),
                   tune_file=settings.get("HPCOLLS_TUNE_FILE"))
