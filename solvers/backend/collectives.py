"""``Collectives``: the one door every message of the solver goes through.

Why one door: the project's claim is that a dense eigensolver spends its time in many small
AllReduces, and that swapping MPI for hpcolls makes them cheap. That is only measurable when
every call is counted (calls, bytes, seconds) per solver stage and the transport can be changed
in one place. Stages therefore never touch a communicator themselves. An array collective
over a scope of one rank is the identity and returns at once, neither sent nor counted.

Scopes: 'all' (the whole grid), 'row' (my grid row), 'col' (my grid column); roots of 'row' /
'col' collectives are grid coordinates (see ProcessGrid).

Kinds of transport for array collectives (Allreduce, Bcast: the panel reductions and panel
broadcasts of potrf, sytrd, ormtr and trsm):
  mpi     — mpi4py directly for numpy buffers; hpcolls.Communicator(comm, algo="mpi") for cupy
            buffers (or host staging if hpcolls cannot be imported, said in ``reason``)
  hpcolls — hpcolls.Communicator(comm): its native kernels for both (hpcolls/routes/native.py),
            with NCCL, the kernels in pieces or MPI past their limits
  nccl    — hpcolls.Communicator(comm, algo="nccl")
Irregular, rare, host-side traffic (object broadcast, error flags, Alltoallv / Scatterv /
Gatherv of whole matrices) always uses the plain mpi4py communicator, still counted.

Times are host wall-clock per call: for cupy buffers that is the enqueue cost, not the device
time (stage wall times are taken after a device synchronize).

mpi4py.MPI is imported where a Collectives is made (its grid's communicators exist: MPI is up),
not with this module: importing it initializes MPI, which `import solvers` must not.
"""
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .arrays import synchronize, to_host

KINDS = ("mpi", "hpcolls", "nccl")


def _mpi():
    """mpi4py.MPI, imported at first use (the module's docstring says why not at the top)."""
    from mpi4py import MPI
    return MPI


def choose_kind(requested, device):
    """('auto'|kind, 'cpu'|'gpu') → (kind, reason for the header)."""
    if requested == "auto":
        if device == "gpu":
            return "hpcolls", "auto: GPU run, small device-buffer collectives go to hpcolls"
        return "mpi", "auto: CPU run, host buffers go to MPI"
    if requested not in KINDS:
        raise ValueError(f"collectives must be one of auto, {', '.join(KINDS)}; got {requested!r}")
    if device == "cpu" and requested != "mpi":
        # hpcolls hands host buffers straight to mpi4py, and NCCL takes device buffers only.
        return "mpi", (f"requested {requested}, but a CPU run's buffers are host memory, which "
                       f"{'NCCL does not take' if requested == 'nccl' else 'hpcolls hands to MPI'}: "
                       f"MPI (mpi4py) carries them")
    return requested, "requested"


@dataclass
class StageStats:
    """What one solver stage spent: wall time and its collective traffic."""
    wall_s: float = 0.0
    calls: int = 0
    bytes: int = 0
    coll_s: float = 0.0
    by_op: dict = field(default_factory=dict)   # op name → [calls, bytes, seconds]
    notes: dict = field(default_factory=dict)   # stage-specific figures (e.g. host µs/column)

    def add(self, op, nbytes, seconds, calls=1):
        self.calls += calls
        self.bytes += nbytes
        self.coll_s += seconds
        entry = self.by_op.setdefault(op, [0, 0, 0.0])
        entry[0] += calls
        entry[1] += nbytes
        entry[2] += seconds


class _HostStaged:
    """mpi4py semantics for cupy buffers by copying through host memory (the fallback when
    hpcolls is unavailable). Slow, but never wrong."""

    def __init__(self, comm):
        self._comm = comm
        self._mpi = _mpi()

    def Allreduce(self, sendbuf, recvbuf, op=None):
        host = to_host(recvbuf).copy()
        if sendbuf is not self._mpi.IN_PLACE:
            host[...] = to_host(sendbuf)
        self._comm.Allreduce(self._mpi.IN_PLACE, host, op=self._mpi.SUM if op is None else op)
        recvbuf.set(host)

    def Bcast(self, buf, root=0):
        host = to_host(buf).copy()
        self._comm.Bcast(host, root=root)
        buf.set(host)


def _wrap_device_comm(comm, kind, on_gpu):
    """The object whose Allreduce/Bcast carries array collectives, and why it was chosen."""
    if kind == "mpi" and not on_gpu:
        return comm, "mpi4py"
    try:
        import hpcolls   # here: an install without its native module has none (see below)
    except ImportError as exc:
        if kind == "mpi":
            return _HostStaged(comm), f"host staging (hpcolls not importable: {exc})"
        raise ImportError(f"--collectives {kind} needs the hpcolls package built with its "
                          f"native module: {exc}") from exc
    if kind == "mpi":
        return hpcolls.Communicator(comm, algo="mpi"), "hpcolls.Communicator(algo='mpi')"
    if kind == "nccl":
        return hpcolls.Communicator(comm, algo="nccl"), "hpcolls.Communicator(algo='nccl')"
    return hpcolls.Communicator(comm), "hpcolls.Communicator()"


def _own_or_staged(wrapper, comm, name, on_gpu):
    """The object whose ``<name>`` carries device buffers: the wrapper if it implements the method
    itself, else host staging. A wrapper that merely forwards unknown attributes to mpi4py would
    hand a device pointer to an MPI that may not be CUDA-aware (a segfault, not an error message).
    The method is looked up at every call, not bound here: an hpcolls.Communicator replaces its
    Allreduce and Bcast with native entries once its native path opens (native/hpcolls/fast_entry.cpp)."""
    if not on_gpu or hasattr(type(wrapper), name):
        return wrapper
    return _HostStaged(comm)


class Collectives:
    """Counted collectives over a ProcessGrid's world / row / column communicators."""

    def __init__(self, grid, kind="mpi", xp=np, reason=""):
        if kind not in KINDS:
            raise ValueError(f"unknown collectives kind {kind!r}; choose from {KINDS}")
        self.grid, self.kind, self.xp = grid, kind, xp
        self.reason = reason
        mpi = _mpi()
        self._ops = {"sum": mpi.SUM, "max": mpi.MAX, "min": mpi.MIN}
        self._in_place = mpi.IN_PLACE
        on_gpu = xp is not np
        self._host = {"all": grid.comm, "row": grid.row_comm, "col": grid.col_comm}
        self._dev = {}
        self._wrappers = {}
        # A collective over one rank is the identity: such scopes skip the transport entirely
        # (on a 1 x P grid every column collective, on P x 1 every row collective).
        self._alone = {scope: comm.Get_size() == 1 for scope, comm in self._host.items()}
        self.transport = None
        for scope, comm in self._host.items():
            wrapper, self.transport = _wrap_device_comm(comm, kind, on_gpu)
            self._wrappers[scope] = wrapper
            self._dev[scope] = {op: _own_or_staged(wrapper, comm, op, on_gpu)
                                for op in ("Allreduce", "Bcast")}
        self.stats = {}
        self._stage = "other"
        self.on_stage_end = None   # optional callback(name, seconds), e.g. progress lines

    # ---- accounting ---------------------------------------------------------------
    @contextmanager
    def stage(self, name):
        """Attribute collectives and wall time inside the block to stage ``name``."""
        outer = self._stage
        self._stage = name
        self.stats.setdefault(name, StageStats())
        start = time.perf_counter()
        try:
            yield self.stats[name]
        finally:
            synchronize(self.xp)
            elapsed = time.perf_counter() - start
            self.stats[name].wall_s += elapsed
            self._stage = outer
            if self.on_stage_end is not None:
                self.on_stage_end(name, elapsed)

    def note(self, key, value):
        """Record a stage-specific figure (shown in the stage report)."""
        self.stats.setdefault(self._stage, StageStats()).notes[key] = value

    def reset(self):
        self.stats = {}

    def _count(self, op, nbytes, start):
        self.stats.setdefault(self._stage, StageStats()).add(op, nbytes, time.perf_counter() - start)

    def count_issued(self, op, calls, nbytes, seconds):
        """Account collectives that native code issued itself (the sytrd column loop)."""
        self.stats.setdefault(self._stage, StageStats()).add(op, nbytes, seconds, calls=calls)

    def scope_size(self, scope):
        return self._host[scope].Get_size()

    def native_allreduce_handle(self, scope, device):
        """A handle for hpcolls' C entry (hpcolls.c_api.comm_capsule) carrying device-buffer
        AllReduces over ``scope`` on GPU ``device`` (opened collectively on first use), for
        native code that issues them itself; None unless the transport is hpcolls with its
        native path on."""
        if self.kind != "hpcolls":
            return None
        from hpcolls import c_api   # here: only a transport made with hpcolls reaches this
        return c_api.comm_capsule(self._wrappers[scope], device)

    # ---- array collectives (numpy or cupy buffers) ------------------------------------
    def allreduce(self, buf, scope="all", op="sum"):
        """In-place Allreduce of a contiguous array over ``scope``; returns buf. Over a scope of
        one rank nothing is sent or counted. A complex sum travels as the sum of its real and
        imaginary parts (the same numbers, for transports that take real types only)."""
        _require_contiguous(buf)
        mpi_op = self._ops[op]
        if self._alone[scope]:
            return buf
        if op != "sum" and self.xp.iscomplexobj(buf):
            raise ValueError(f"allreduce op {op!r} is not defined for complex numbers")
        start = time.perf_counter()
        self._dev[scope]["Allreduce"].Allreduce(self._in_place, _as_real(buf), op=mpi_op)
        self._count("allreduce", buf.nbytes, start)
        return buf

    def bcast(self, buf, root, scope="all"):
        """In-place Bcast of a contiguous array from grid coordinate / rank ``root``. Over a
        scope of one rank nothing is sent or counted."""
        _require_contiguous(buf)
        if self._alone[scope]:
            if root != 0:   # what MPI would reject: a caller's wrong root must not pass silently
                raise ValueError(f"bcast root {root} outside the one-rank {scope!r} scope")
            return buf
        start = time.perf_counter()
        self._dev[scope]["Bcast"].Bcast(_as_real(buf), root=root)
        self._count("bcast", buf.nbytes, start)
        return buf

    def bcast_idle(self, buf, root=0):
        """Bcast of a host (numpy) array over the whole grid in which the ranks other than
        ``root`` wait without spinning (polling a non-blocking Ibcast, sleeping between polls),
        so that their cores are free for ``root``'s work until it sends: how a problem solved
        on one rank is handed to the others."""
        start = time.perf_counter()
        request = self._host["all"].Ibcast(buf, root=root)
        pause = 20e-6
        while not request.Test():
            time.sleep(pause)
            pause = min(2 * pause, 1e-3)
        self._count("bcast_idle", buf.nbytes, start)
        return buf

    # ---- host-side, irregular traffic -----------------------------------------------
    def bcast_host(self, buf, root=0):
        """Bcast of a host (numpy) array over the whole grid by mpi4py, whatever the transport."""
        start = time.perf_counter()
        self._host["all"].Bcast(buf, root=root)
        self._count("bcast_host", buf.nbytes, start)
        return buf

    def bcast_obj(self, obj, root=0, scope="all"):
        """Broadcast a small picklable object (metadata, verdicts, error messages)."""
        start = time.perf_counter()
        obj = self._host[scope].bcast(obj, root=root)
        self._count("bcast_obj", 0, start)
        return obj

    def allgather_obj(self, obj, scope="all"):
        """Every rank's small picklable object, in rank order (set-up facts, verdicts)."""
        start = time.perf_counter()
        objs = self._host[scope].allgather(obj)
        self._count("allgather_obj", 0, start)
        return objs

    def any_flag(self, flag, scope="all"):
        """True on every rank if ``flag`` is true on any rank (collective error decisions)."""
        start = time.perf_counter()
        result = self._host[scope].allreduce(int(bool(flag)), op=self._ops["max"])
        self._count("allreduce_flag", 8, start)
        return bool(result)

    def largest(self, value, scope="all"):
        """The largest of a host number over ``scope``, on every rank (a collective decision)."""
        start = time.perf_counter()
        result = self._host[scope].allreduce(float(value), op=self._ops["max"])
        self._count("allreduce_max", 8, start)
        return result

    def alltoallv(self, sendbuf, sendcounts, recvbuf, recvcounts):
        """Host Alltoallv over the whole grid with per-rank element counts."""
        start = time.perf_counter()
        send_displ = _displacements(sendcounts)
        recv_displ = _displacements(recvcounts)
        self._host["all"].Alltoallv([sendbuf, (sendcounts, send_displ)],
                                    [recvbuf, (recvcounts, recv_displ)])
        self._count("alltoallv", sendbuf.nbytes, start)

    def scatterv(self, sendbuf, counts, recvbuf, root=0):
        """Host Scatterv over the whole grid (sendbuf only significant on root)."""
        start = time.perf_counter()
        spec = [sendbuf, (counts, _displacements(counts))] if sendbuf is not None else None
        self._host["all"].Scatterv(spec, recvbuf, root=root)
        self._count("scatterv", recvbuf.nbytes, start)

    def gatherv(self, sendbuf, recvbuf, counts, root=0):
        """Host Gatherv over the whole grid (recvbuf only significant on root)."""
        start = time.perf_counter()
        spec = [recvbuf, (counts, _displacements(counts))] if recvbuf is not None else None
        self._host["all"].Gatherv(sendbuf, spec, root=root)
        self._count("gatherv", sendbuf.nbytes, start)


def create_collectives(grid, requested, xp):
    """Collectives for ``requested`` ('auto' or a kind) on this backend.

    'auto' on a GPU prefers hpcolls but falls back to 'mpi' (logged in ``reason``) when hpcolls
    cannot be imported, so a GPU run never fails just because the native module is missing.
    """
    device = "cpu" if xp is np else "gpu"
    kind, reason = choose_kind(requested, device)
    if requested == "auto" and kind != "mpi":
        try:
            import hpcolls  # noqa: F401
        except ImportError as exc:
            kind, reason = "mpi", f"auto: hpcolls not importable ({exc}); using mpi"
    return Collectives(grid, kind, xp, reason=reason)


def _displacements(counts):
    counts = np.asarray(counts, dtype=np.int64)
    return np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)


def _as_real(buf):
    """A complex array as the real array of its (re, im) pairs (a view); others as they are."""
    if buf.dtype.kind != "c":
        return buf
    return buf.view(buf.dtype.char.lower())   # F → f, D → d


def _require_contiguous(buf):
    flags = buf.flags
    if not flags.c_contiguous:
        raise ValueError("collective buffers must be C-contiguous arrays")
