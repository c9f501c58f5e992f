"""Runs one of mpi4py's own test modules (from its unpacked sdist) on every rank and records
each test's outcome, as it happens, in OUT/<module>.rank<R>.jsonl.

    mpiexec -n 3 python runner.py --test-dir DIR --module test_cco_buf --out OUT
            [--wrapper none|identity|hpcolls] [--arrays host|cupy|all]

--wrapper decides which communicator the module's test classes use, those based on COMM_WORLD
and those based on COMM_SELF alike:
  none      mpi4py's COMM_WORLD and COMM_SELF, as mpi4py's own runner does (the reference run);
  hpcolls   hpcolls.wrap(COMM_WORLD) and hpcolls.wrap(COMM_SELF): the module's global `MPI`
            becomes a view of mpi4py.MPI whose COMM_WORLD and COMM_SELF are the wrappers (so
            setUp's `MPI.COMM_WORLD.Dup()` is the wrapper's Dup), class attributes holding either
            are replaced by its wrapper, and every communicator congruent to either that a setUp
            leaves on the test is wrapped as well (with cupy arrays on an MPI that is not
            CUDA-aware, an unwrapped communicator would hand MPI device pointers);
  identity  the same substitutions with MPI.Intracomm(comm) (a second Python object on the same
            handle; COMM_WORLD and COMM_SELF themselves for those) in place of hpcolls.wrap:
            checks that the substitution alone changes no outcome.
mpi4py's files are not modified; the substitutions are made on the imported module.

--arrays picks arrayimpl's backends: host (array, numpy, DLPack-on-CPU and the fake-GPU arrays
that expose __cuda_array_interface__ on host memory; the default, as mpi4py's runner without
--cupy), cupy (the cupy-backed ones only) or all.

A line {"event": "start"} is written before a test and {"event": "end", "outcome": ...} after it,
flushed each time, so a crash leaves the test that crashed as a start without an end.
"""
import argparse
import importlib
import json
import os
import sys
import time
import types
import unittest

import numpy

from mpi4py import MPI

GPU_BACKENDS = ("cupy", "dlpack-cupy", "numba")


PREDEFINED = ("COMM_WORLD", "COMM_SELF")


def congruent_to(value, base):
    """True for a plain intracommunicator whose group is `base`'s, in the same order."""
    if not isinstance(value, MPI.Intracomm) or isinstance(value, MPI.Topocomm):
        return False
    if value == MPI.COMM_NULL:
        return False
    return MPI.Comm.Compare(value, base) in (MPI.IDENT, MPI.CONGRUENT)


class Substitution:
    """Puts `wrap(comm)` where a test module would use COMM_WORLD, COMM_SELF or a communicator
    congruent to one of them; `is_wrapped(value)` says what needs no wrapping again."""

    def __init__(self, wrap, is_wrapped):
        self.wrap = wrap
        self.is_wrapped = is_wrapped
        self.predefined = {name: wrap(getattr(MPI, name)) for name in PREDEFINED}
        self.class_wraps = 0  # class attributes replaced
        self.setup_wraps = 0  # communicators a setUp made that were not wrapped already

    def _replacement(self, value):
        if self.is_wrapped(value):
            return None
        for name in PREDEFINED:
            if value is getattr(MPI, name):
                return self.predefined[name]
        if any(congruent_to(value, getattr(MPI, name)) for name in PREDEFINED):
            return self.wrap(value)
        return None

    def module(self, module):
        """Class attributes, then the module's global name MPI."""
        for obj in list(vars(module).values()):
            if isinstance(obj, type) and issubclass(obj, unittest.TestCase):
                for klass in obj.__mro__:
                    for name, value in list(vars(klass).items()):
                        new = self._replacement(value)
                        if new is not None:
                            self.class_wraps += 1
                            setattr(klass, name, new)
        if getattr(module, "MPI", None) is MPI:
            view = types.ModuleType("mpi4py.MPI")
            view.__dict__.update(vars(MPI))
            for name, wrapper in self.predefined.items():
                setattr(view, name, wrapper)
            module.MPI = view

    def test(self, test):
        """After the test's own setUp, wrap what it left on the instance."""
        original = test.setUp

        def setUp():
            original()
            for name, value in list(vars(test).items()):
                new = self._replacement(value)
                if new is not None:
                    self.setup_wraps += 1
                    setattr(test, name, new)
        test.setUp = setUp


def make_substitution(kind):
    if kind == "none":
        return None
    if kind == "identity":
        # COMM_WORLD and COMM_SELF stay themselves: a second object on their handle would fail
        # test_comm's testPickle, which wants loads(dumps(COMM_WORLD)) to be that very object.
        copies = {}  # id -> the copy, kept alive so that no later object reuses its id

        def wrap(comm):
            if any(comm is getattr(MPI, name) for name in PREDEFINED):
                return comm
            copy = MPI.Intracomm(comm)
            copies[id(copy)] = copy
            return copy
        return Substitution(wrap, lambda value: copies.get(id(value)) is value)
    if kind == "hpcolls":
        import hpcolls
        return Substitution(hpcolls.wrap, lambda value: isinstance(value, hpcolls.Communicator))
    raise ValueError(f"unknown --wrapper {kind!r}")


def converting_init(xp):
    """An __init__ for arrayimpl's cupy backend that fills the array (of the array module `xp`)
    the way its numpy backend does: values go through numpy's astype, which wraps them into the
    type's range. mpi4py 4.1's own cupy __init__ passes Python ints straight to cupy (e.g. -1 into
    an unsigned type, to poison a receive buffer), which cupy 14 rejects as out of range."""
    def __init__(self, arg, typecode, shape=None, readonly=False):
        if shape is None:
            shape = () if isinstance(arg, (int, float, complex)) else len(arg)
        self.array = xp.zeros(shape, typecode)
        if isinstance(arg, xp.ndarray):
            values = arg.astype(typecode)
        else:
            values = xp.asarray(numpy.asarray(arg).astype(typecode))
        self.array[...] = values
        del readonly  # as mpi4py's: cupy arrays cannot be made read-only
    return __init__


def restore_row_stack(np):
    """NumPy 2.5 removed `row_stack` (an alias of `vstack`, deprecated since 2.0), which the
    cupy-array runs of mpi4py 4.1.2's in-place Gather/Scatter/Allgather tests still reach with
    cupy 14 (AttributeError on the GPU machine; neither mpi4py's test/ nor hpcolls names it):
    the alias is put back in this process only, where it is missing."""
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def patch_cupy_backend(arrayimpl):
    """Gives arrayimpl's cupy backends (GPUArrayCuPy and DLPackCuPy, which calls it) the
    converting __init__, and numpy its row_stack back, in this process only: mpi4py's files
    stay as they are."""
    klass = getattr(arrayimpl, "GPUArrayCuPy", None)
    if klass is not None:
        import cupy
        klass.__init__ = converting_init(cupy)
        restore_row_stack(numpy)


def select_backends(arrayimpl, arrays):
    def is_gpu(klass):
        return klass.backend in GPU_BACKENDS
    keep = {"host": lambda k: not is_gpu(k), "cupy": is_gpu, "all": lambda k: True}[arrays]
    arrayimpl.ArrayBackends[:] = [k for k in arrayimpl.ArrayBackends if keep(k)]
    return [k.__name__ for k in arrayimpl.ArrayBackends]


def describe(err):
    kind, value, _ = err
    first = (str(value).strip().splitlines() or [""])[0]
    return f"{kind.__name__}: {first}"[:300]


class RecordingResult(unittest.TestResult):
    """Writes each test's outcome to `sink` as it finishes: passed, failed, error, skipped,
    xfail, xpass, plus counts of failed / erroring / skipped subtests."""

    def __init__(self, sink):
        super().__init__()
        self.sink = sink
        self.record = None

    def _write(self, **fields):
        self.sink.write(json.dumps(fields) + "\n")
        self.sink.flush()

    def startTest(self, test):
        super().startTest(test)
        self.record = {"test": test.id(), "outcome": "passed", "detail": "",
                       "sub_failed": 0, "sub_error": 0, "sub_skipped": 0, "seconds": time.monotonic()}
        self._write(event="start", test=test.id())

    def _set(self, test, outcome, detail):
        if self.record is None or test.id() != self.record["test"]:
            # setUpClass / setUpModule / tearDown*Class errors come outside any test
            self._write(event="end", test=str(test), outcome=outcome, detail=detail,
                        sub_failed=0, sub_error=0, sub_skipped=0)
            return
        if self.record["outcome"] == "passed":
            self.record["outcome"], self.record["detail"] = outcome, detail

    def addError(self, test, err):
        super().addError(test, err)
        self._set(test, "error", describe(err))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._set(test, "failed", describe(err))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        if isinstance(test, unittest.case._SubTest):
            self.record["sub_skipped"] += 1
        else:
            self._set(test, "skipped", str(reason)[:300])

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._set(test, "xfail", describe(err))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._set(test, "xpass", "")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is None:
            return
        failed = issubclass(err[0], test.failureException)
        self.record["sub_failed" if failed else "sub_error"] += 1
        if self.record["outcome"] == "passed" or not self.record["detail"]:
            self.record["outcome"] = "failed" if failed else "error"
            self.record["detail"] = f"{subtest._subDescription()} {describe(err)}"[:300]

    def stopTest(self, test):
        super().stopTest(test)
        self.record["seconds"] = round(time.monotonic() - self.record["seconds"], 3)
        self._write(event="end", **self.record)
        self.record = None


def iter_tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from iter_tests(item)
        else:
            yield item


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test-dir", required=True, help="the test/ directory of mpi4py's sdist")
    parser.add_argument("--module", required=True, help="e.g. test_cco_buf")
    parser.add_argument("--out", required=True, help="directory for the per-rank result files")
    parser.add_argument("--wrapper", choices=["none", "identity", "hpcolls"], default="none")
    parser.add_argument("--arrays", choices=["host", "cupy", "all"], default="host")
    args = parser.parse_args(argv)

    sys.dont_write_bytecode = True  # leave no __pycache__ in the cached sdist
    sys.path.insert(0, os.path.abspath(args.test_dir))
    arrayimpl = importlib.import_module("arrayimpl")
    if args.arrays != "host":
        patch_cupy_backend(arrayimpl)
    backends = select_backends(arrayimpl, args.arrays)
    if not backends:  # e.g. --arrays cupy where cupy does not import: nothing would be tested
        sys.exit(f"runner: no array backend of kind {args.arrays!r} (is cupy importable?)")
    substitution = make_substitution(args.wrapper)
    module = importlib.import_module(args.module)
    if substitution is not None:
        substitution.module(module)
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    if substitution is not None:
        for test in iter_tests(suite):
            substitution.test(test)

    rank = MPI.COMM_WORLD.Get_rank()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{args.module}.rank{rank}.jsonl"), "w") as sink:
        sink.write(json.dumps({"event": "header", "module": args.module, "wrapper": args.wrapper,
                               "arrays": args.arrays, "backends": backends,
                               "ranks": MPI.COMM_WORLD.Get_size()}) + "\n")
        result = RecordingResult(sink)
        suite.run(result)
        sink.write(json.dumps({"event": "done", "tests_run": result.testsRun,
                               "class_wraps": substitution.class_wraps if substitution else 0,
                               "setup_wraps": substitution.setup_wraps if substitution else 0}) + "\n")
    MPI.COMM_WORLD.Barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
