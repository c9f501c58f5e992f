"""The buffer methods' C entry for host buffers (native/host_entry/host_entry.cpp, made by
hpcolls/routes/host.py's `direct`): a call whose buffer arguments are all host memory of a kind
it knows goes to mpi4py's method with the very arguments it was made with; every other call
(a buffer that may be device memory, `stream=`, a keyword mpi4py lacks, the gate closed, the log
at INFO) goes to hpcolls' Python method, unchanged. Here for every method of hpcolls.methods'
table with recording stand-ins at both ends; then on the real communicator (COMM_SELF, one
process): each entry's ends, wrong arguments, validation and the log.
tests/mpi/test_hpcolls_host_entry_mpi.py runs the real entries at 1 to 4 ranks."""
import array
import inspect
import random

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from hpcolls import buffers, log, methods, routes, validation
from hpcolls.communicator import Communicator, _Topocomm
from hpcolls.routes import host
from hpcolls.tools import host_overhead
from pretend_device import PretendDevice

pytestmark = pytest.mark.skipif(host._HostEntry is None, reason="hpcolls._host_entry is not built")

# Host memory the entry knows by its type (each a fresh object per call of the factory).
HOST = {
    "numpy": lambda: np.random.default_rng().standard_normal(3),
    "bytes": lambda: bytes(16),
    "bytearray": lambda: bytearray(16),
    "memoryview": lambda: memoryview(bytearray(16)),
    "array.array": lambda: array.array("d", [1.0, 2.0]),
    "None": lambda: None,
    "IN_PLACE": lambda: MPI.IN_PLACE,
    "BOTTOM": lambda: MPI.BOTTOM,
    "type-spec": lambda: [np.ones(2), MPI.DOUBLE],
    "count-spec": lambda: [np.ones(4), 2, MPI.DOUBLE],
    "tuple-spec": lambda: (bytearray(16), MPI.DOUBLE),
    "vector-spec": lambda: [np.ones(4), ([1, 3], [0, 1]), MPI.DOUBLE],
    "vector-w-spec": lambda: [np.ones(2), ([1, 1], [0, 8]), [MPI.DOUBLE, MPI.DOUBLE]],
    "bottom-spec": lambda: [MPI.BOTTOM, 1, MPI.DOUBLE],
    "empty-spec": lambda: [],
}


class NumpySub(np.ndarray):
    """A numpy subclass: it could carry __cuda_array_interface__, so the entry does not decide."""


class ListSpec(list):
    """A list subclass: it may index its own way."""


class HostDLPack:
    """Host memory behind DLPack only."""

    def __init__(self, a):
        self.__dlpack__, self.__dlpack_device__ = a.__dlpack__, a.__dlpack_device__


class CudaDLPack:
    """Stands for a DLPack producer on a CUDA device (what __dlpack_device__ says is all the
    decision may read)."""

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0

    def __dlpack__(self, stream=None):
        raise AssertionError("the decision read the data")


class NumpySubWithCAI(np.ndarray):
    """Host memory by numpy's type, device memory by the interface it adds: not numpy itself."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ctypes.data, False), "version": 3}


class TorchLike:
    """Stands for a torch tensor (hpcolls.buffers reads torch's by their module)."""


TorchLike.__module__ = "torch"

# What the entry leaves to the Python method, which decides (device, or host all the same).
OTHER = {
    "cuda-array-interface": lambda: PretendDevice(np.ones(2)),
    "cuda-array-interface-spec": lambda: [PretendDevice(np.ones(2)), MPI.DOUBLE],
    "dlpack": lambda: HostDLPack(np.ones(2)),
    "numpy-subclass": lambda: np.ones(2).view(NumpySub),
    "numpy-scalar": lambda: np.float64(1.0),
    "list-subclass-spec": lambda: ListSpec([np.ones(2), MPI.DOUBLE]),
    "nested-spec": lambda: [[np.ones(2)], MPI.DOUBLE],
    "torch-like": TorchLike,
    "dlpack-cuda": CudaDLPack,
    "dlpack-cuda-spec": lambda: (CudaDLPack(), MPI.DOUBLE),
    "numpy-subclass-with-cai": lambda: np.ones(2).view(NumpySubWithCAI),
}


class Gate:
    """Stands for the communicator: the attribute the entry's gate reads."""

    def __init__(self, open_):
        self.direct = open_


def recording(method, gate=None):
    """(entry for `method` with recording ends, [(which end, args, kwargs), ...])."""
    seen = []

    def base(*args, **kwargs):
        seen.append(("base", args, kwargs))
        return "base"

    def full(*args, **kwargs):
        seen.append(("full", args, kwargs))
        return "full"
    full.__signature__ = inspect.signature(full)
    return host.direct(method, full, gate=gate, base=base), seen


def arguments(method, value_of):
    """A call's positional arguments: every parameter up to the last buffer one, buffers from
    `value_of(name)`, the others plain objects."""
    names = [name for name, _ in method.buffers]
    last = max(method.parameters.index(name) for name in names)
    return [value_of(p) if p in names else object() for p in method.parameters[:last + 1]]


def same(got, want):
    which, args, kwargs = got
    assert len(args) == len(want[1]) and all(a is b for a, b in zip(args, want[1])), (args, want[1])
    assert kwargs.keys() == want[2].keys() and all(kwargs[k] is want[2][k] for k in kwargs), (kwargs, want[2])
    assert which == want[0]


def call_both_ways(entry, seen, comm, method, value_of, end):
    """Positional, then all keywords, then the first buffer positional and the rest keywords: each
    reaches `end` with exactly the arguments given."""
    args = arguments(method, value_of)
    kw = dict(zip(method.parameters, args))
    first = method.parameters.index(method.buffers[0][0])
    for positional, keywords in ((args, {}), ([], kw), (args[:first + 1], dict(list(kw.items())[first + 1:]))):
        seen.clear()
        assert entry(comm, *positional, **keywords) == end
        assert len(seen) == 1
        same(seen[0], (end, (comm, *positional), keywords))


@pytest.mark.parametrize("name", sorted(methods.METHODS))
def test_host_calls_reach_mpi4py_as_made_and_others_the_python_method(name):
    method = methods.METHODS[name]
    entry, seen = recording(method)
    comm = object()
    for kind, make in HOST.items():
        call_both_ways(entry, seen, comm, method, lambda p: make(), "base")
    buffer_names = [b for b, _ in method.buffers]
    for kind, make in OTHER.items():
        for odd in buffer_names:  # one buffer of another kind, the others host memory
            host_kind = random.choice(list(HOST.values()))
            call_both_ways(entry, seen, comm, method, lambda p: make() if p == odd else host_kind(), "full")


def test_the_same_arguments_and_keywords_reach_either_end_for_every_call_form():
    """stream=, a keyword mpi4py lacks, a keyword given twice, too many or too few arguments:
    the entry passes them on as given (the Python method reads stream=; mpi4py refuses the rest)."""
    entry, seen = recording(methods.METHODS["Allreduce"])
    x, y, comm = np.ones(1), np.ones(1), object()
    for args, kwargs, end in (((x, y), {"stream": 5}, "full"), ((x, y), {"stream": None}, "full"),
                              ((x, y), {"bogus": 1}, "full"), ((x, y), {"self": 1}, "full"),
                              ((x, y), {"sendbuf": x}, "base"), ((x, y, MPI.SUM, 4, 5), {}, "base"),
                              ((x,), {}, "base"), ((), {}, "base"), ((x, y), {"op": MPI.MAX}, "base"),
                              ((x,), {"recvbuf": PretendDevice(np.ones(1))}, "full")):
        seen.clear()
        entry(comm, *args, **kwargs)
        same(seen[0], (end, (comm, *args), kwargs))
    seen.clear()
    entry()  # no self: the Python method says what is wrong
    assert seen == [("full", (), {})]


def test_a_keyword_built_at_run_time_is_read_by_its_text():
    entry, seen = recording(methods.METHODS["Bcast"])
    name = "".join(["bu", "f"])
    entry(object(), **{name: PretendDevice(np.ones(1))})
    assert seen[0][0] == "full"
    seen.clear()
    entry(object(), **{"".join(["str", "eam"]): 3, "buf": np.ones(1)})
    assert seen[0][0] == "full"


def test_the_gate_and_the_log_level_send_calls_to_the_python_method(monkeypatch):
    entry, seen = recording(methods.METHODS["Allreduce"], gate="direct")
    x, y = np.ones(1), np.ones(1)
    monkeypatch.setattr(log, "level", log.LEVELS["WARN"])
    for comm, end in ((Gate(True), "base"), (Gate(False), "full"), (Gate(1), "full"), (object(), "full")):
        seen.clear()
        entry(comm, x, y)
        assert seen[0][0] == end, comm
    for level, end in (("INFO", "full"), ("TRACE", "full"), ("NONE", "base"), ("WARN", "base")):
        monkeypatch.setattr(log, "level", log.LEVELS[level])
        seen.clear()
        entry(Gate(True), x, y)
        assert seen[0][0] == end, level
    monkeypatch.setattr(log, "level", "WARN")  # not an integer: the Python method reads it
    seen.clear()
    entry(Gate(True), x, y)
    assert seen[0][0] == "full"


def test_the_kinds_the_entry_decides_are_host_memory_to_the_buffer_parse(monkeypatch):
    """buffers.device_array calls them host memory without asking CUDA (a question would fail)."""
    def no_cuda(ptr):
        raise AssertionError("CUDA was asked")
    monkeypatch.setattr(buffers, "_pointer_is_device", no_cuda)
    for kind, make in HOST.items():
        assert buffers.device_array(make()) is None, kind
    assert buffers.device_array(np.ones(1).view(NumpySub)) is None  # decided by the full path


# -- the real communicator ----------------------------------------------------------------------

@pytest.fixture
def wrapped():
    c = hpcolls.wrap(MPI.COMM_SELF, validate=False)
    yield c
    c.close()


def test_every_buffer_method_is_an_entry_between_mpi4py_s_method_and_hpcolls_python_one():
    for owner, cls in ((MPI.Comm, Communicator), (MPI.Intracomm, Communicator), (MPI.Topocomm, _Topocomm)):
        for name, method in methods.of_class(owner).items():
            entry = vars(cls)[name]
            assert isinstance(entry, host._HostEntry), name
            assert entry.base is getattr(owner, name), name
            assert entry.full.__name__ == name and entry.full.__module__ == "hpcolls.communicator"
            assert entry.gate == ("_host_collectives_direct" if method.collective else None), name
            params = list(inspect.signature(entry).parameters)
            assert params == ["self", *method.parameters, "stream"], name
            assert entry.__doc__ == entry.full.__doc__ and entry.__name__ == name


def test_bound_and_unbound_calls(wrapped):
    x, y = np.arange(3.0), np.zeros(3)
    assert wrapped.Allreduce.__self__ is wrapped and wrapped.Allreduce.__func__ is Communicator.Allreduce
    Communicator.Allreduce(wrapped, x, y)
    assert y.tolist() == x.tolist()
    assert inspect.ismethoddescriptor(Communicator.Allreduce) and "Allreduce" in repr(Communicator.Allreduce)


WRONG = {  # name -> call(comm): arguments mpi4py refuses
    "missing": lambda c: c.Allreduce(np.ones(1)),
    "too-many": lambda c: c.Allreduce(np.ones(1), np.ones(1), MPI.SUM, 3),
    "twice": lambda c: c.Allreduce(np.ones(1), np.ones(1), sendbuf=np.ones(1)),
    "unknown-keyword": lambda c: c.Bcast(np.ones(1), rooot=0),
    "not-a-buffer": lambda c: c.Bcast("text"),
    "not-an-op": lambda c: c.Allreduce(np.ones(1), np.ones(1), op="SUM"),
    "not-a-rank": lambda c: c.Send(np.ones(1), dest="x"),
    "bad-spec": lambda c: c.Allreduce([np.ones(1), "DOUBLE"], np.ones(1)),
    "none": lambda c: c.Allreduce(None, None),
}


@pytest.mark.parametrize("case", list(WRONG))
def test_wrong_arguments_raise_what_mpi4py_raises(wrapped, case):
    """Before the settings are read (the Python method's way) and after (the entry's)."""
    errors = []
    assert wrapped._host_collectives_direct is False
    for comm in (MPI.COMM_SELF, wrapped, wrapped):
        with pytest.raises(Exception) as error:
            WRONG[case](comm)
        errors.append((type(error.value), str(error.value)))
        if comm is wrapped:
            wrapped.config  # noqa: B018 - read: collectives now take the entry's way to mpi4py
    assert errors[0] == errors[1] == errors[2]


def count_calls(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)
    monkeypatch.setattr(module, name, counted)
    return calls


def test_host_collectives_skip_python_once_the_settings_ask_no_validation(wrapped, monkeypatch):
    routed = count_calls(monkeypatch, routes, "call")
    x, y = np.ones(2), np.zeros(2)
    wrapped.Allreduce(x, y)  # the first collective reads the settings
    assert len(routed) == 1 and wrapped._host_collectives_direct is True
    for _ in range(5):
        wrapped.Allreduce(x, y)
        wrapped.Send(x, 0, 1)
        wrapped.Recv(y, 0, 1)
    assert len(routed) == 1
    wrapped.Allreduce(x, y, stream=None)  # the Python method reads stream=
    assert len(routed) == 2


def test_validation_sees_every_host_collective(monkeypatch):
    checked = count_calls(monkeypatch, validation, "check")
    comm = hpcolls.wrap(MPI.COMM_SELF, validate=True)
    x, y = np.ones(2), np.zeros(2)
    for _ in range(4):
        comm.Allreduce(x, y)
        comm.Bcast(x)
        comm.Iallreduce(x, y).Wait()
    assert len(checked) == 12 and comm._host_collectives_direct is False
    comm.close()


def test_the_info_log_sees_every_host_call(wrapped, monkeypatch):
    handed = count_calls(monkeypatch, routes.host, "call")
    monkeypatch.setattr(log, "level", log.LEVELS["INFO"])
    x, y = np.ones(2), np.zeros(2)
    for _ in range(3):
        wrapped.Allreduce(x, y)
        wrapped.Send(x, 0, 2)
        wrapped.Recv(y, 0, 2)
    assert len(handed) == 9


DEVICE_LIKE = {  # objects that may be device memory, none of them cupy (there is no GPU here)
    "cuda-array-interface": lambda: PretendDevice(np.ones(1)),
    "cuda-array-interface-spec": lambda: [PretendDevice(np.ones(1)), 1, MPI.DOUBLE],
    "dlpack-cuda": CudaDLPack,
    "numpy-subclass-with-cai": lambda: np.ones(1).view(NumpySubWithCAI),
}


@pytest.mark.parametrize("device", list(DEVICE_LIKE))
def test_device_looking_buffers_take_hpcolls_routes_in_every_method(wrapped, monkeypatch, device):
    """A buffer that may be device memory, in any buffer parameter of any buffer method,
    positional or keyword, reaches hpcolls.routes.call (where the device routes are) with the
    call's arguments as given, once the settings are read (the entry's gate open). Nothing
    reaches MPI here."""
    wrapped.config  # noqa: B018 - collectives on host buffers would now go to mpi4py directly
    assert wrapped._host_collectives_direct is True
    seen = []
    monkeypatch.setattr(routes, "call", lambda *call: seen.append(call))
    ring = wrapped.Create_cart([1], periods=[True])
    for name, method in methods.METHODS.items():
        target = ring if method.owner is MPI.Topocomm else wrapped
        for odd, _ in method.buffers:
            args = arguments(method, lambda p: DEVICE_LIKE[device]() if p == odd else np.ones(1))
            for positional, keywords in ((args, {}), ([], dict(zip(method.parameters, args)))):
                seen.clear()
                getattr(target, name)(*positional, **keywords)
                assert len(seen) == 1, (name, odd)
                comm, routed, called_on, got_args, got_kwargs, stream = seen[0]
                assert comm is target and called_on is target and routed is method and stream is None
                same(("full", got_args, got_kwargs), ("full", tuple(positional), keywords))
    ring.Free()


def bad_calls(name, parameters):
    """{case: source of a call of method `name` on `c` that mpi4py refuses}, from the benchmark's
    call of it (hpcolls.tools.host_overhead): too many arguments, an unknown keyword, a str for
    its first buffer, none at all, a buffer given twice."""
    own = host_overhead.calls()[name][0]
    given = own.split(", ")
    return {
        "too-many": f"c.{name}({own}{', 0' * (len(parameters) - len(given) + 1)})",
        "unknown-keyword": f"c.{name}({own}, bogus=1)",
        "str-buffer": f"c.{name}('text', {', '.join(given[1:])})",
        "no-arguments": f"c.{name}()",
        "given-twice": f"c.{name}({own}, {parameters[0]}=x)",
        "bytes-written": f"c.{name}({', '.join(('b' if p == 'recvbuf' else g) for p, g in zip(parameters, given))})",
    }


@pytest.mark.parametrize("name", sorted(methods.METHODS))
def test_bad_arguments_raise_what_mpi4py_raises_in_every_method(name, monkeypatch):
    """On plain mpi4py, through the Python method (before the settings are read, and with the log
    at INFO, which sends every call there) and through the entry: the same exception, the same
    message. COMM_SELF (its periodic ring for the neighborhood collectives): nothing here reaches
    another rank."""
    method = methods.METHODS[name]
    names = host_overhead.namespace(MPI.COMM_SELF, 0, 1)
    names["b"] = bytes(8)  # read-only: refused as a receive buffer
    ring = MPI.COMM_SELF.Create_cart([1], periods=[True])
    plain = ring if method.owner is MPI.Topocomm else MPI.COMM_SELF
    for case, source in bad_calls(name, method.parameters).items():
        if case == "bytes-written" and "recvbuf" not in method.parameters:
            continue
        errors = []
        for how in ("plain", "python-method", "entry", "info-log"):
            comm = plain if how == "plain" else hpcolls.wrap(plain, validate=False)
            if how in ("entry", "info-log"):
                comm.config  # noqa: B018 - the entry's gate opens
            monkeypatch.setattr(log, "level", log.LEVELS["INFO" if how == "info-log" else "WARN"])
            with pytest.raises(Exception) as error:
                eval(source, {**names, "c": comm})  # noqa: S307 - this module's source only
            errors.append((how, type(error.value), str(error.value)))
        assert len({(kind, text) for _, kind, text in errors}) == 1, (case, errors)
    ring.Free()
