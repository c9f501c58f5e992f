"""Run-time settings from the environment, read once per communicator, and the selection table.

| variable | meaning | default |
| --- | --- | --- |
| HPCOLLS_ALGO | auto, oneshot, twoshot, nccl or mpi | auto |
| HPCOLLS_ONESHOT_MAX_BYTES | largest message for one-shot (auto) | from SELECTION_TABLE |
| HPCOLLS_TWOSHOT_MAX_BYTES | largest message for two-shot (auto); above: NCCL, else MPI | from SELECTION_TABLE |
| HPCOLLS_SCRATCH_BYTES | LL scratch per rank per communicator, both halves | 8 MiB |
| HPCOLLS_TIMEOUT | seconds a kernel waits for a peer before failing the call | 10 |
| HPCOLLS_VALIDATE | 1: check on every call that all ranks agree on count, dtype, op | 0 |
| HPCOLLS_DEBUG | WARN, INFO or TRACE (see hpcolls.log) | WARN |
| HPCOLLS_MPI_CUDA_AWARE | 0/1: override detection of a CUDA-aware MPI | detected |
"""
import os
from dataclasses import dataclass

ALGOS = ("auto", "oneshot", "twoshot", "nccl", "mpi")

# The one selection table: per maximum rank count, the largest message (bytes) for one-shot and
# for two-shot under HPCOLLS_ALGO=auto. Larger messages go to NCCL when it can run, else MPI.
# The native path also stops where the scratch budget does (one-shot: scratch/4/N bytes).
# Measured on one H200 (docs/PERFORMANCE.md); rows are (max ranks, oneshot max, twoshot max).
SELECTION_TABLE = (
    (2, 256 << 10, 1 << 20),
    (4, 64 << 10, 1 << 20),
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
        return cls(algo=algo,
                   oneshot_max_bytes=_int_env("HPCOLLS_ONESHOT_MAX_BYTES", one),
                   twoshot_max_bytes=_int_env("HPCOLLS_TWOSHOT_MAX_BYTES", two),
                   scratch_bytes=_int_env("HPCOLLS_SCRATCH_BYTES", 8 << 20),
                   timeout_s=timeout,
                   validate=(os.environ.get("HPCOLLS_VALIDATE", "0") not in ("", "0")
                             if validate is None else bool(validate)))
