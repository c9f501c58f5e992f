"""tests/mpi4py_suite/runner.py's substitution, on a test module written the way mpi4py's are: the
COMM_WORLD-based and the COMM_SELF-based test classes must see the wrapper (class attribute,
setUp's Dup, COMM_WORLD / COMM_SELF named in a test body, a topology made from COMM_SELF), so that
no unwrapped communicator receives a cupy array in the GPU runs. Without this, a harness that
substituted nothing would report every module equal."""
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
        seen[type(self).__name__ + ".self"] = MPI.COMM_SELF
        seen[type(self).__name__ + ".cart"] = cart = MPI.COMM_SELF.Create_cart([1], periods=[0])
        cart.Free()
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

class TestSelfDup(TestSelf):
    def setUp(self):
        self.COMM = MPI.COMM_SELF.Dup()

    def tearDown(self):
        self.COMM.Free()

class TestOwnSelfDup(Base, unittest.TestCase):
    def setUp(self):
        from mpi4py import MPI as real
        self.COMM = real.COMM_SELF.Dup()

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


def test_world_and_self_based_classes_get_the_wrapper():
    seen, substitution = run_substituted("hpcolls")
    for name, value in seen.items():
        assert isinstance(value, hpcolls.Communicator), name
    assert seen["TestWorld"] is seen["TestWorld.body"] is seen["TestSelf.body"]
    assert seen["TestSelf"] is seen["TestSelf.self"] is seen["TestWorld.self"]
    assert MPI.Comm.Compare(seen["TestSelf"], MPI.COMM_SELF) == MPI.IDENT
    assert isinstance(seen["TestWorld.cart"], MPI.Cartcomm)
    # TestOwnDup's and TestOwnSelfDup's; the Dups of wrappers came wrapped
    assert substitution.setup_wraps == 2


def test_identity_substitution_uses_other_objects_on_the_same_handles():
    seen, substitution = run_substituted("identity")
    assert seen["TestWorld"] is MPI.COMM_WORLD and seen["TestWorld.body"] is MPI.COMM_WORLD
    assert type(seen["TestWorldDup"]) is MPI.Intracomm and type(seen["TestOwnDup"]) is MPI.Intracomm
    assert type(seen["TestSelfDup"]) is MPI.Intracomm and type(seen["TestOwnSelfDup"]) is MPI.Intracomm
    assert substitution.setup_wraps == 4  # the four Dups, each replaced by a second object on its handle
    assert seen["TestSelf"] is MPI.COMM_SELF and seen["TestSelf.self"] is MPI.COMM_SELF


def test_the_plain_run_substitutes_nothing():
    assert runner.make_substitution("none") is None
