"""Every HPCOLLS_* environment setting, in one registry: name, parser, default and meaning.

config.py, log.py, staging/pmpi_library.py, binding.py, `python -m hpcolls info` and README's table
all read the settings through `get`; no other module reads HPCOLLS_* from os.environ. A value is
parsed when it is read, so a bad one raises (or, for HPCOLLS_DEBUG, warns) naming the variable.
"""
import contextlib
import os
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[str, str], Any]   # (name, text) -> value; raises ValueError naming the variable
    default: Any
    doc: str
    default_doc: str = ""              # how the default reads in the docs, when not str(default)


def _int(name, text):
    try:
        value = int(float(text))
    except ValueError:
        raise ValueError(f"hpcolls: {name}={text!r} is not a number") from None
    if value < 0:
        raise ValueError(f"hpcolls: {name} must be >= 0, not {value}")
    return value


def _positive_float(name, text):
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"hpcolls: {name}={text!r} is not a number") from None
    if value <= 0:
        raise ValueError(f"hpcolls: {name} must be a positive number of seconds")
    return value


def _flag(name, text):
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"hpcolls: {name}={text!r} is neither 1 nor 0")


def _choice(*choices):
    def parse(name, text):
        value = text.strip().lower()
        if value not in choices:
            raise ValueError(f"hpcolls: {name}={text!r} is not one of {', '.join(choices)}")
        return value
    return parse


def _tristate(name, text):
    """0 or 1; anything else is no override (None)."""
    return {"0": False, "1": True}.get(text.strip())


def _text(_name, text):
    return text.strip()


ALGOS = ("auto", "oneshot", "twoshot", "nccl", "mpi")
PROTOCOLS = ("auto", "ll", "sentinel", "ll128")
DEBUG_LEVELS = ("none", "warn", "info", "trace")
STAGING_KINDS = ("pinned", "pageable")
HIERARCHY_SCHEMES = ("auto", "leaders", "slices", "off")

SETTINGS = (
    Setting("HPCOLLS_DEBUG", _text, "WARN",
            "`NONE`, `WARN`, `INFO` (each decision once: the route each method takes and why) or `TRACE`; "
            "rank-prefixed, on stderr. `INFO` and above (and `HPCOLLS_VALIDATE=1`) route every collective the "
            "native kernels carry through the full Python method, which logs, instead of the native entries that "
            "take common cupy calls (`native/hpcolls/fast_entry.cpp`)", "`WARN`"),
    Setting("HPCOLLS_ALGO", _choice(*ALGOS), "auto", "`auto`, `oneshot`, `twoshot`, `nccl`, `mpi`", "`auto`"),
    Setting("HPCOLLS_PROTOCOL", _choice(*PROTOCOLS), "auto",
            "how the native kernels move data: `auto` (the selection table picks per collective, size and rank "
            "count: native/hpcolls/plan.cpp, docs/ARCHITECTURE.md#protocol-selection), or `ll`, `sentinel`, "
            "`ll128` forced where the collective has a kernel on that protocol and its scratch region is there "
            "(LL128 only where its probe showed whole lines); other calls stay on LL", "`auto`"),
    Setting("HPCOLLS_SENTINEL_SCRATCH_BYTES", _int, 32 << 20,
            "the sentinel protocol's scratch region per rank per communicator (both halves, at most 8 GiB; "
            "24 bytes per 16 bytes of payload); `0` turns the protocol off", "32 MiB"),
    Setting("HPCOLLS_LL128_SCRATCH_BYTES", _int, 16 << 20,
            "the LL128 protocol's scratch region per rank per communicator (both halves, at most 8 GiB); "
            "`0` turns the protocol off", "16 MiB"),
    Setting("HPCOLLS_ONESHOT_MAX_BYTES", _int, None,
            "largest Allreduce for one-shot: overrides the selection table (native/hpcolls/plan.cpp)", "table"),
    Setting("HPCOLLS_TWOSHOT_MAX_BYTES", _int, None,
            "largest Allreduce for two-shot (larger: NCCL, else the native kernels in pieces): overrides the "
            "selection table", "table"),
    Setting("HPCOLLS_TUNE_FILE", _text, "",
            "where `python -m hpcolls tune` stores the selection tables it measures and where a communicator "
            "looks for one measured for its GPU model, ranks per GPU, rank count and kernel set (a mismatched, "
            "stale or unreadable file is ignored, the reason logged; hpcolls/tuned_table.py); `none`: no tuned "
            "table, the plan's built-in one", "`$XDG_CACHE_HOME/hpcolls/selection.json` (`~/.cache/...`)"),
    Setting("HPCOLLS_SCRATCH_BYTES", _int, 8 << 20,
            "LL scratch per rank per communicator (both halves, at most 8 GiB); one-shot carries up to "
            "scratch/4/N bytes", "8 MiB"),
    Setting("HPCOLLS_TIMEOUT", _positive_float, 10.0,
            "seconds a kernel waits for a peer before the call fails (the communicator is then broken)", "10"),
    Setting("HPCOLLS_LL128_PROBE_MS", _int, 10,
            "milliseconds the LL128 torn-line probe writes at each communicator's set-up (every rank stores "
            "128-byte lines into every peer's scratch while the peer checks each line it reads; LL128 is used only "
            "if no rank saw a torn line: hpcolls/ll128_probe.py, docs/ARCHITECTURE.md#ll128); `0` skips the probe "
            "and keeps LL128 off", "`10`"),
    Setting("HPCOLLS_VALIDATE", _flag, False,
            "`1`: before every collective (host or device buffers), check that all ranks agree on the method, "
            "count, datatype, op and root (one allgather more per call); raises `hpcolls.ValidationError` on "
            "every rank instead of hanging or giving different results", "`0`"),
    Setting("HPCOLLS_MPI_CUDA_AWARE", _tristate, None,
            "`0`/`1`: override the CUDA-aware-MPI detection (not CUDA-aware: device buffers of calls that go "
            "to MPI are staged through host memory). `1` on an MPI that is not CUDA-aware crashes it", "detected"),
    Setting("HPCOLLS_STAGING", _choice(*STAGING_KINDS), "pinned",
            "host memory device buffers are staged through for an MPI that is not CUDA-aware: `pinned` "
            "(page-locked, reused per communicator) or `pageable` (fresh per call; for comparison)", "`pinned`"),
    Setting("HPCOLLS_DEVICE", _int, None, "GPU index for this rank (else chosen from the node-local rank)", ""),
    Setting("HPCOLLS_NODE_SIZE", _int, 0,
            "`k`: world ranks k·i .. k·i+k−1 count as one node (emulated nodes on one host: traffic between "
            "them takes the inter-node route, never CUDA IPC; hpcolls/hierarchy/nodes.py)", "node from MPI (`0`)"),
    Setting("HPCOLLS_HIERARCHY", _choice(*HIERARCHY_SCHEMES), "auto",
            "a communicator over several nodes: `auto` (the latency model picks per size, "
            "hpcolls/hierarchy/model.py), `leaders` (node reduce → node leaders → node bcast), `slices` "
            "(node reduce-scatter → each local rank's slice between nodes → node allgather), or `off` (no "
            "hierarchical path: NCCL or MPI over all ranks); docs/ARCHITECTURE.md, \"Hierarchy\"", "`auto`"),
    Setting("HPCOLLS_ALLOW_GPU_SHARING", _flag, False,
            "`1`: allow more ranks than GPUs on a node without MPS", "`0`"),
    Setting("HPCOLLS_CUDA_ARCHITECTURES", _text, "90-real;100-real;100-virtual",
            "at build time: CMake CUDA architectures (read by CMakeLists.txt, not at run time); `default` is "
            "CMake's list, `no-gpu` a quick build that imports but runs on no GPU (machines without one). "
            "Unset, jobs/local/setup.sh builds for the visible GPUs' own architectures "
            "(jobs/local/cuda_architectures.sh), `no-gpu` where there is none; a plain `pip install` builds "
            "CMake's list", "`90-real;100-real;100-virtual`"),
    Setting("HPCOLLS_DEPENDENT_LAUNCH", _int, 1,
            "`0`: launch each collective kernel after the kernel before it on the stream has ended, instead of "
            "as its programmatic dependent, which may start while that one drains (GPUs of compute capability "
            "9.0+; native/include/hpcolls/dependent_launch.cuh). On by default: less device time per small call "
            "on one GPU (docs/PERFORMANCE.md#dependent-launch); not yet run on several GPUs. "
            "Where ranks share a GPU only grids of at most half a rank's share of the SMs use it: two waiting "
            "full-share grids on each rank held the SMs a late rank needed (time-outs seen at 4 ranks on one "
            "GPU)", "`1`"),
    Setting("HPCOLLS_PMPI_WAIT", _choice("flag", "sync"), "flag",
            "C, C++ and Fortran programs through the PMPI library: how the host waits for a blocking collective "
            "on device buffers: `flag` (the stream writes a host-mapped word after the kernel, the host polls it) "
            "or `sync` (cudaStreamSynchronize); docs/DROP_IN.md", "`flag`"),
    Setting("HPCOLLS_PMPI_RESIDENT_US", _int, 0,
            "C, C++ and Fortran programs through the PMPI library: `0` (off), or the µs a resident kernel "
            "stays on the GPU after a call: blocking collectives of up to 16 KiB on device buffers are then "
            "posted to that kernel instead of launching one each. It does not wait for the caller's stream "
            "(synchronize your device work first, as CUDA-aware MPIs require), and a device-wide "
            "synchronize waits until it leaves; every rank must set the same value; docs/DROP_IN.md#resident",
            "`0` (off)"),
    Setting("HPCOLLS_THREADS_PER_BLOCK", _int, 0,
            "diagnosis only: kernel block size (whole warps, 32..1024, capped at what a kernel can run). Set, it "
            "keeps one-shot calls at 2, 4 or 8 ranks on the general one-shot kernel instead of the "
            "small-message one (a block per 4 KiB, up to the rank's share of the SMs)", "chosen (`0`)"),
    Setting("HPCOLLS_LL_MODE", _int, 0,
            "diagnosis only: LL store/poll variant 0..3 (native/include/hpcolls/ll_line.cuh; modes 1..3 need "
            "the diagnostic module, built with `HPCOLLS_DIAGNOSTICS=1` in the install's environment); not 0 "
            "keeps one-shot calls on the general one-shot kernel as HPCOLLS_THREADS_PER_BLOCK does", "`0`"),
    Setting("HPCOLLS_DIAGNOSTICS", _flag, False,
            "at build time: `1` also builds the diagnostic module hpcolls._native_diag (LL modes 1..3, launch "
            "probes, peek/poke; read by CMakeLists.txt, not at run time)", "`0`"),
)
_BY_NAME = {s.name: s for s in SETTINGS}


def get(name, env=None):
    """The parsed value of setting `name` from `env` (default os.environ); its default when unset
    or empty."""
    setting = _BY_NAME[name]
    text = (os.environ if env is None else env).get(name)
    if text is None or text.strip() == "":
        return setting.default
    return setting.parse(name, text)


@contextlib.contextmanager
def overridden(values):
    """The process environment with {setting name: text} set for the `with` block, then as it
    was: for a tool or test that makes a communicator under other settings (a communicator reads
    its settings once, at its first use, which must happen inside the block)."""
    unknown = sorted(set(values) - set(_BY_NAME))
    if unknown:
        raise KeyError(f"hpcolls: no such setting: {', '.join(unknown)}")
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, text in saved.items():
            if text is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = text


def is_set(name, env=None):
    return ((os.environ if env is None else env).get(name) or "").strip() != ""


def markdown_table():
    """README's table of the settings (tests check that README holds exactly this)."""
    rows = ["| variable | meaning | default |", "| --- | --- | --- |"]
    rows += [f"| `{s.name}` | {s.doc} | {s.default_doc or s.default} |" for s in SETTINGS]
    return "\n".join(rows)


def current_lines(env=None):
    """One line per setting: its value here, and whether it came from the environment."""
    return [f"{s.name}={get(s.name, env)!r}" + ("" if is_set(s.name, env) else " (default)") for s in SETTINGS]
