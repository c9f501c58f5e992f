"""Host buffers through the buffer methods' C entry (native/host_entry/host_entry.cpp) on real
MPI: every call of tests/buffer_calls.py, on numpy buffers and on array.array / bytearray
copies, gives exactly what plain mpi4py gives without entering hpcolls' Python method once the
communicator's settings are read; with validate=True every collective, with the log at INFO
every call, still goes through it. The benchmark of the same entries (python -m hpcolls.tools.host_overhead) runs once
with a few calls, for every buffer method, at this rank count (its times are not checked).
"""
import array
import contextlib
import io

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from buffer_calls import buffer_calls, copy_call
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
    if comm.rank == 0:
        rows = {line.split(" | ")[0].lstrip("| ") for line in out.getvalue().splitlines() if line.startswith("| ")}
        assert rows - {"method", "---"} == set(methods.METHODS)
