"""tests/mpi4py_suite/runner.py's substitution, on a test module written the way mpi4py's are: the
COMM_WORLD-based test classes must see the wrapper (class attribute, setUp's Dup, COMM_WORLD
named in a test body), the COMM_SELF-based ones mpi4py's own communicator. Without this, a
harness that substituted nothing would report every module equal."""
import sys
import types
import unittest
from pathlib import Path

from mpi4py import MPI

import hpcolls

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mpi4py_suite"))
import runner  # noqa: E402

SOURCE = '''
import unittest
from mpi4py import MPI

seen = {}

class Base:
    COMM = MPI.COMM_NULL

    def test_record(self):
        seen[type(self).__name__] = self.COMM
        seen[type(self).__name__ + ".body"] = MPI.COMM_WORLD
        self.assertEqual(self.COMM.Get_size(), self.COMM.Get_size())

class TestWorld(Base, unittest.TestCase):
    COMM = MPI.COMM_WORLD

class TestSelf(Base, unittest.TestCase):
    COMM = MPI.COMM_SELF

class TestWorldDup(TestWorld):
    def setUp(self):
        self.COMM = MPI.COMM_WORLD.Dup()

    def tearDown(self):
        self.COMM.Free()

class TestOwnDup(Base, unittest.TestCase):
    def setUp(self):
        from mpi4py import MPI as real  # mpi4py's own COMM_WORLD, not the module's global
        self.COMM = real.COMM_WORLD.Dup()

    def tearDown(self):
        self.COMM.Free()
'''


def run_substituted(kind):
    module = types.ModuleType("test_fake_mpi4py_module")
    exec(compile(SOURCE, module.__name__, "exec"), module.__dict__)
    substitution = runner.make_substitution(kind)
    substitution.module(module)
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    for test in runner.iter_tests(suite):
        substitution.test(test)
    result = unittest.TestResult()
    suite.run(result)
    assert result.wasSuccessful(), result.errors + result.failures
    return module.seen, substitution


def test_world_based_classes_get_the_wrapper():
    seen, substitution = run_substituted("hpcolls")
    for name in ("TestWorld", "TestWorld.body", "TestWorldDup", "TestWorldDup.body", "TestOwnDup", "TestSelf.body"):
        assert isinstance(seen[name], hpcolls.Communicator), name
    assert seen["TestWorld"] is seen["TestWorld.body"] is seen["TestSelf.body"]
    assert substitution.setup_wraps >= 1  # TestOwnDup's; TestWorldDup's came wrapped from the wrapper's Dup or not
    # COMM_SELF is congruent to COMM_WORLD at one rank, so it is wrapped there too
    assert isinstance(seen["TestSelf"], hpcolls.Communicator) == (MPI.COMM_WORLD.Get_size() == 1)


def test_identity_substitution_uses_other_objects_on_the_same_handles():
    seen, substitution = run_substituted("identity")
    assert seen["TestWorld"] is MPI.COMM_WORLD and seen["TestWorld.body"] is MPI.COMM_WORLD
    assert type(seen["TestWorldDup"]) is MPI.Intracomm and type(seen["TestOwnDup"]) is MPI.Intracomm
    assert substitution.setup_wraps == 2  # both Dups, each replaced by a second object on its handle
    assert MPI.COMM_WORLD.Get_size() == 1 or seen["TestSelf"] is MPI.COMM_SELF


def test_the_plain_run_substitutes_nothing():
    assert runner.make_substitution("none") is None
