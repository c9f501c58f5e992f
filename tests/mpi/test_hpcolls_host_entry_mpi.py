"""Host buffers through the buffer methods' C entry (native/host_entry/host_entry.cpp) on real
MPI: every buffer method of mpi4py's communicators (the benchmark's call of each, on random
numpy, bytearray, memoryview and array.array buffers), every call of tests/buffer_calls.py
(IN_PLACE, [buf, count, type] specs, keywords, every root) in its blocking, nonblocking and
persistent forms on numpy, memoryview and array.array copies, and MPI.BOTTOM specs give exactly
what plain mpi4py gives without entering hpcolls' Python method once the communicator's
settings are read; with validate=True every collective, with the log at INFO every call, still
goes through it. The benchmark of the same entries (python -m hpcolls.tools.host_overhead) runs once
with a few calls, for every buffer method, at this rank count (its times are not checked).
A call the MPI library lacks (Open MPI 4.1: MPI-4's; plain mpi4py raises NotImplementedError)
must raise the same through the wrapper; the test then skips naming it, after every other check
(tests/mpi_support.py).
"""
import array
import contextlib
import io

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from buffer_calls import POISON, buffer_calls, copy_call
from mpi_support import skip_lacking
from hpcolls import log, methods, routes, validation
from hpcolls.routes import host
from hpcolls.tools import host_overhead

pytestmark = pytest.mark.skipif(host._HostEntry is None, reason="hpcolls._host_entry is not built")

WORLD = MPI.COMM_WORLD
CALLS = list(buffer_calls(WORLD.rank, WORLD.size, 0))


@pytest.fixture
def seed(comm):
    return comm.bcast(int(np.random.SeedSequence().entropy % 2**63))


def counted(monkeypatch, module, name):
    """The calls of module.name from now on (it still runs)."""
    calls, original = [], getattr(module, name)

    def count(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)
    monkeypatch.setattr(module, name, count)
    return calls


KINDS = {  # kind -> (numpy array -> object of that kind or None where it cannot hold the type, object -> bytes)
    "numpy": (np.copy, lambda o: o.tobytes()),
    "memoryview": (lambda a: memoryview(a.copy()), lambda o: o.tobytes()),
    "array.array": (lambda a: None if a.dtype.kind == "c" else array.array(a.dtype.char, a.tobytes()),
                    lambda o: o.tobytes()),
}


def test_every_host_call_reaches_mpi4py_directly_and_matches_it(comm, seed, monkeypatch):
    """Each call once on plain mpi4py, then through the wrapper once per kind that can hold its types."""
    wrapped = hpcolls.wrap(comm, validate=False)
    wrapped.Barrier()
    wrapped.config  # noqa: B018 - the settings, read by a first collective in a program
    routed = counted(monkeypatch, routes, "call")
    done = dict.fromkeys(KINDS, 0)
    for case, (name, args, kwargs) in buffer_calls(comm.rank, comm.size, seed).items():
        plain_args, plain_kwargs, want = copy_call(args, kwargs, np.copy)
        getattr(comm, name)(*plain_args, **plain_kwargs)
        for kind, (convert, to_bytes) in KINDS.items():
            held = []  # None where the kind cannot hold the array's type
            kind_args, kind_kwargs, got = copy_call(args, kwargs, lambda a: held.append(convert(a)) or held[-1])
            if any(h is None for h in held):
                continue  # (the same on every rank)
            assert getattr(wrapped, name)(*kind_args, **kind_kwargs) is None
            assert [to_bytes(g) for g in got] == [w.tobytes() for w in want], f"{kind} {case}"
            done[kind] += 1
    assert min(done.values()) >= len(CALLS) // 2, done
    assert routed == [], [args[1].name for args in routed]
    wrapped.close()


# Host memory of each kind the entry knows, holding float64 (bytearray: the same bytes, read by
# mpi4py as bytes where a call names no type).
MEMORY_KINDS = {
    "numpy": lambda a: a,
    "bytearray": lambda a: bytearray(a.tobytes()),
    "memoryview": memoryview,
    "array.array": lambda a: array.array("d", a.tobytes()),
}


def filled(seed, rank, kind):
    """The benchmark namespace's `make`: random inputs and poisoned outputs (the same for the
    same seed and rank), of memory kind `kind`."""
    rng = np.random.default_rng([seed, rank])
    convert = MEMORY_KINDS[kind]
    return lambda length, output: convert(np.full(length, POISON, np.float64) if output else rng.standard_normal(length))


def contents(names):
    """The bytes of every buffer of a benchmark namespace, inputs and outputs."""
    return {key: bytes(memoryview(names[key]).cast("B")) for key in ("x", "y", "z", "sn", "gn", "s2", "g2")}


@pytest.mark.parametrize("kind", list(MEMORY_KINDS))
def test_every_buffer_method_on_every_host_kind_matches_mpi4py(comm, seed, kind, monkeypatch):
    """The benchmark's call of each buffer method (blocking, nonblocking, persistent, partitioned;
    the neighborhood ones on a periodic ring), once on plain mpi4py and once through the wrapper,
    from the same random inputs: the same bytes in every buffer, and no call through hpcolls'
    Python method."""
    wrapped = hpcolls.wrap(comm, validate=False)
    ring, wrapped_ring = comm.Create_cart([comm.size], periods=[True]), wrapped.Create_cart([comm.size], periods=[True])
    wrapped.config, wrapped_ring.config  # noqa: B018 - the settings, read by a first collective in a program
    routed = counted(monkeypatch, routes, "call")
    poisoned, wrote, lacking = np.full(1, POISON, np.float64).tobytes(), set(), set()
    MPI.Attach_buffer(bytearray(1 << 16))  # for Bsend
    try:
        for name, (arguments, _, on_ring) in host_overhead.available().items():
            if kind == "bytearray" and any(spec in arguments.split(", ") for spec in ("sv", "gv", "s2v", "g2v", "ones")):
                continue  # counts with no type count bytes there: one of them would truncate (the w forms name types)
            plain, mine = (ring, wrapped_ring) if on_ring else (comm, wrapped)
            results = []
            for c in (plain, mine):
                names = host_overhead.namespace(comm, comm.rank, comm.size, filled(seed, comm.rank, kind))
                try:
                    host_overhead.compile_step(name, names)(c)
                except NotImplementedError:
                    if c is mine:
                        raise  # the wrapper lacks what plain mpi4py has
                    # This MPI library lacks it: the wrapper's own call raises the same (the step
                    # may have failed at its plain partner's call, Precv_init's Psend_init).
                    with pytest.raises(NotImplementedError):
                        getattr(mine, name)(*eval(f"[{arguments}]", names))  # noqa: S307 - the benchmark's source
                    lacking.add(name)
                    break
                results.append(contents(names))
            if name in lacking:
                continue
            assert results[0] == results[1], name
            if results[0]["y"] != poisoned:
                wrote.add(name)
    finally:
        MPI.Detach_buffer()
    assert routed == [], [args[1].name for args in routed]
    assert set(host_overhead.available()) == set(methods.METHODS)
    # the comparison is of calls that did something: those whose one output is y wrote it
    writers = {"Allreduce", "Iallreduce", "Allreduce_init", "Recv", "Sendrecv", "Scatter", "Psend_init"}
    assert writers - lacking <= wrote, wrote
    for c in (ring, wrapped_ring):
        c.Free()
    wrapped.close()
    skip_lacking(lacking)


def run_form(comm, name, args, kwargs):
    """mpi4py's method `name` (blocking, nonblocking or persistent) called and completed."""
    result = getattr(comm, name)(*args, **kwargs)
    if methods.METHODS[name].completion == methods.PERSISTENT:
        result.Start()
        result.Wait()
        result.Free()
    elif methods.METHODS[name].completion == methods.NONBLOCKING:
        result.Wait()
    else:
        assert result is None


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_call_form_in_nonblocking_and_persistent_forms_matches_mpi4py(comm, seed, kind, monkeypatch):
    """tests/buffer_calls.py's calls (IN_PLACE, specs, keywords, every root) in each form mpi4py
    has: blocking, I..., ..._init."""
    wrapped = hpcolls.wrap(comm, validate=False)
    wrapped.config  # noqa: B018 - as above
    routed = counted(monkeypatch, routes, "call")
    convert, to_bytes = KINDS[kind]
    done, lacking = 0, set()
    for case, (blocking, args, kwargs) in buffer_calls(comm.rank, comm.size, seed).items():
        for name in (blocking, "I" + blocking[0].lower() + blocking[1:], blocking + "_init"):
            if name not in methods.METHODS:
                continue  # a form MPI lacks (Sendrecv_init)
            plain_args, plain_kwargs, want = copy_call(args, kwargs, np.copy)
            held = []
            kind_args, kind_kwargs, got = copy_call(args, kwargs, lambda a: held.append(convert(a)) or held[-1])
            if any(h is None for h in held):
                continue  # a type this kind cannot hold (the same on every rank)
            try:
                run_form(comm, name, plain_args, plain_kwargs)
            except NotImplementedError:  # this MPI library lacks it: so must the wrapper
                with pytest.raises(NotImplementedError):
                    run_form(wrapped, name, kind_args, kind_kwargs)
                lacking.add(name)
                continue
            run_form(wrapped, name, kind_args, kind_kwargs)
            assert [to_bytes(g) for g in got] == [w.tobytes() for w in want], f"{kind} {name} {case}"
            done += 1
    assert done >= len(CALLS), done
    assert routed == []
    wrapped.close()
    skip_lacking(lacking)


def test_bottom_specs_match_mpi4py(comm, seed, monkeypatch):
    """[MPI.BOTTOM, count, type] with a type of absolute addresses, in collectives and point to
    point, blocking and nonblocking (not in reductions: MPI reduces predefined types only)."""
    wrapped = hpcolls.wrap(comm, validate=False)
    wrapped.config  # noqa: B018 - as above
    routed = counted(monkeypatch, routes, "call")
    right, left, last = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size, comm.size - 1
    results = []
    for c in (comm, wrapped):
        rng = np.random.default_rng([seed, comm.rank])
        x, y, b, g = rng.standard_normal(3), np.full(3, POISON, np.float64), rng.standard_normal(2), np.full(
            3 * comm.size, POISON, np.float64)
        at = {key: MPI.Datatype.Create_struct([a.size], [MPI.Get_address(a)], [MPI.DOUBLE]).Commit()
              for key, a in (("x", x), ("y", y), ("b", b))}
        spec = {key: [MPI.BOTTOM, 1, t] for key, t in at.items()}
        c.Bcast(spec["b"], root=last)
        c.Gather(spec["x"], [g, MPI.DOUBLE], root=0)
        c.Sendrecv(spec["x"], right, 3, spec["y"], left, 3)
        request = c.Isend(spec["b"], right, 4)
        c.Recv(x, left, 4)
        request.Wait()
        c.Ibcast(spec["y"], root=0).Wait()
        results.append((x.tobytes(), y.tobytes(), b.tobytes(), g.tobytes() if comm.rank == 0 else b""))
        for t in at.values():
            t.Free()
    assert results[0] == results[1]
    assert POISON not in np.frombuffer(results[0][1]) and (comm.rank != 0 or POISON not in np.frombuffer(results[0][3]))
    assert routed == []
    wrapped.close()


def test_validation_and_the_info_log_see_every_call(comm, seed, monkeypatch):
    checked = counted(monkeypatch, validation, "check")
    handed = counted(monkeypatch, host, "call")
    wrapped = hpcolls.wrap(comm, validate=True)
    cases = buffer_calls(comm.rank, comm.size, seed)
    for name, args, kwargs in cases.values():
        getattr(wrapped, name)(*args, **kwargs)
    collective = sum(methods.METHODS[name].collective for name, _, _ in cases.values())
    assert len(checked) == len(handed) == collective  # point-to-point calls are not validated: direct
    wrapped.close()
    checked.clear()
    handed.clear()
    monkeypatch.setattr(log, "level", log.LEVELS["INFO"])
    quiet = hpcolls.wrap(comm, validate=False)
    for name, args, kwargs in buffer_calls(comm.rank, comm.size, seed).values():
        getattr(quiet, name)(*args, **kwargs)
    assert checked == [] and len(handed) == len(cases)
    quiet.close()


def test_the_benchmark_times_every_buffer_method(comm):
    """Its steps cover hpcolls.methods' table, and one short run prints a row for each."""
    assert set(host_overhead.all_steps(comm, comm.rank, comm.size)) == set(methods.METHODS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert host_overhead.main(["--calls", "2", "--rounds", "2"]) == 0
    # The calls the MPI library lacks (plain mpi4py raises NotImplementedError) have no row: the
    # tool names them instead.
    missing = "# not in this MPI library (mpi4py raises NotImplementedError): "
    lacking = set()
    if comm.rank == 0:
        lines = out.getvalue().splitlines()
        rows = {line.split(" | ")[0].lstrip("| ") for line in lines if line.startswith("| ")}
        lacking = {name for line in lines if line.startswith(missing) for name in line[len(missing):].split(", ")}
        assert not rows & lacking
        assert (rows - {"method", "---"}) | lacking == set(methods.METHODS)
    skip_lacking(comm.bcast(lacking), what="timed", checked=False)
