"""tests/mpi4py_suite's comparison: two recorded runs of test modules, written by runner.py's own
RecordingResult from real unittest suites, must be called equal only when every test's outcome
is the same, and every difference must be named. Also the runner's fix of mpi4py's cupy test
arrays, with numpy as the array module (the GPU machine runs it with cupy)."""
import json
import sys
import unittest
from pathlib import Path

import numpy
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mpi4py_suite"))
import compare  # noqa: E402
import runner  # noqa: E402

MODULE = "test_fake"
RANKS = 2


def make_case(behaviour):
    """A TestCase class whose tests do what `behaviour` says: {test name: kind}, kind one of
    pass, fail, error, skip, or subtests:F:E:S (F failing, E erring, S skipped subtests)."""
    def method(kind):
        def test(self):
            if kind == "fail":
                self.assertEqual(1, 2)
            elif kind == "error":
                raise TypeError("no such thing")
            elif kind == "skip":
                self.skipTest("not here")
            elif kind.startswith("subtests"):
                failing, erring, skipped = map(int, kind.split(":")[1:])
                for i in range(failing + erring + skipped + 1):
                    with self.subTest(i=i):
                        if i < failing:
                            self.fail("subtest failed")
                        elif i < failing + erring:
                            raise ValueError("subtest erred")
                        elif i < failing + erring + skipped:
                            self.skipTest("subtest skipped")
        return test
    return type("TestFake", (unittest.TestCase,), {"__module__": MODULE, **{f"test_{n}": method(k) for n, k in behaviour.items()}})


def record(directory, behaviours, status="0", crash_in=None):
    """Writes a run of MODULE as runner.py does: behaviours[rank] for each rank, run.sh's status
    file; crash_in=(rank, test name) cuts that rank's file as a crash inside that test would."""
    directory.mkdir(parents=True, exist_ok=True)
    for rank, behaviour in enumerate(behaviours):
        path = directory / f"{MODULE}.rank{rank}.jsonl"
        with open(path, "w") as sink:
            unittest.defaultTestLoader.loadTestsFromTestCase(make_case(behaviour)).run(runner.RecordingResult(sink))
        if crash_in and crash_in[0] == rank:
            lines = path.read_text().splitlines()
            cut = next(i for i, line in enumerate(lines) if json.loads(line)["test"].endswith(crash_in[1]))
            path.write_text("\n".join(lines[:cut + 1]) + '\n{"event": "end", "te')  # a line cut short
    (directory / f"{MODULE}.status").write_text(status + "\n")
    return compare.load_run(str(directory), [MODULE], RANKS)


BASE = {"a": "pass", "b": "skip", "c": "subtests:0:0:2", "d": "pass"}


def both_ranks(behaviour):
    return [behaviour, behaviour]


def test_equal_runs_pass_with_the_right_counts(tmp_path):
    plain = record(tmp_path / "plain", both_ranks(BASE))
    wrapped = record(tmp_path / "wrapped", both_ranks(BASE))
    text, status = compare.report(plain, wrapped, RANKS)
    assert status == 0
    assert text.splitlines()[-1] == "mpi4py-suite: 3 passed, 0 failed, 1 skipped"
    assert "| test_fake | 0, 3/0/1 | 0, 3/0/1 | 0 |" in text


@pytest.mark.parametrize("kind, shown", [
    ("error", "passed -> error  [TypeError: no such thing]"),
    ("fail", "passed -> failed  [AssertionError: 1 != 2]"),
    ("skip", "passed -> skipped  [not here]"),
    ("subtests:1:0:0", "passed -> failed (2 subtests failed)  [(i=0) AssertionError: subtest failed]"),
    ("subtests:0:1:0", "passed -> error (2 subtests erred)  [(i=0) ValueError: subtest erred]"),
])
def test_a_test_whose_outcome_changed_is_named(tmp_path, kind, shown):
    plain = record(tmp_path / "plain", both_ranks(BASE))
    wrapped = record(tmp_path / "wrapped", both_ranks({**BASE, "d": kind}))
    text, status = compare.report(plain, wrapped, RANKS)
    assert status == 1
    assert f"TestFake.test_d: {shown}" in text
    assert "TestFake.test_a" not in text
    assert text.splitlines()[-1].startswith("mpi4py-suite: 2 passed, 1 failed")


def test_a_failure_on_one_rank_only_counts(tmp_path):
    plain = record(tmp_path / "plain", both_ranks(BASE))
    wrapped = record(tmp_path / "wrapped", [BASE, {**BASE, "a": "fail"}])
    text, status = compare.report(plain, wrapped, RANKS)
    assert status == 1 and "TestFake.test_a: passed -> failed" in text


def test_skipped_subtests_count_unless_outcome_only(tmp_path):
    plain = record(tmp_path / "plain", both_ranks(BASE))
    wrapped = record(tmp_path / "wrapped", both_ranks({**BASE, "c": "subtests:0:0:1"}))
    text, status = compare.report(plain, wrapped, RANKS)
    assert status == 1
    assert "TestFake.test_c: passed (4 subtests skipped) -> passed (2 subtests skipped)" in text
    assert compare.report(plain, wrapped, RANKS, skipped_subtests=False)[1] == 0


def test_a_crash_marks_its_test_and_the_tests_never_run(tmp_path):
    plain = record(tmp_path / "plain", both_ranks(BASE))
    wrapped = record(tmp_path / "wrapped", both_ranks(BASE), status="139", crash_in=(0, "test_b"))
    text, status = compare.report(plain, wrapped, RANKS)
    assert status == 1
    assert "TestFake.test_b: skipped -> crashed  [the job ended in this test (crashed)]" in text
    assert "TestFake.test_c: passed (4 subtests skipped) -> missing (2 subtests skipped)" in text
    assert "| test_fake | 0, 3/0/1 | 139, " in text


def test_a_different_exit_with_the_same_outcomes_differs(tmp_path):
    plain = record(tmp_path / "plain", both_ranks(BASE))
    wrapped = record(tmp_path / "wrapped", both_ranks(BASE), status="124")
    text, status = compare.report(plain, wrapped, RANKS)
    assert status == 1 and "test_fake.(exit status): exit 0 -> exit 124" in text


def test_an_incomplete_reference_run_fails_even_when_equal(tmp_path):
    plain = record(tmp_path / "plain", both_ranks(BASE), status="1")
    wrapped = record(tmp_path / "wrapped", both_ranks(BASE), status="1")
    text, status = compare.report(plain, wrapped, RANKS)
    assert status == 1 and "the plain run did not complete" in text


def test_a_module_that_never_ran_is_reported(tmp_path):
    plain = record(tmp_path / "plain", both_ranks(BASE))
    (tmp_path / "wrapped").mkdir()
    wrapped = compare.load_run(str(tmp_path / "wrapped"), [MODULE], RANKS)
    text, status = compare.report(plain, wrapped, RANKS)
    assert status == 1
    assert "TestFake.test_a: passed -> not run" in text
    assert text.splitlines()[-1] == "mpi4py-suite: 0 passed, 4 failed, 0 skipped"


def test_known_differences_are_apart_and_stale_ones_named(tmp_path):
    plain = record(tmp_path / "plain", both_ranks(BASE))
    wrapped = record(tmp_path / "wrapped", both_ranks({**BASE, "a": "error", "d": "fail"}))
    known = tmp_path / "known.txt"
    known.write_text("# why: the wrapper is not an MPI.Comm yet\n*.TestFake.test_a  # TypeError\ntest_fake.*.test_gone\n")
    text, status = compare.report(plain, wrapped, RANKS, known=compare.read_known(str(known)))
    assert status == 1  # test_d is not listed
    assert "1 known differences" in text and "1 tests differ" in text
    assert "delete these lines): test_fake.*.test_gone" in text
    assert text.splitlines()[-1] == "mpi4py-suite: 1 passed, 1 failed, 1 skipped, 1 known differences"
    known.write_text("test_fake.TestFake.test_[ad]\n")
    text, status = compare.report(plain, wrapped, RANKS, known=compare.read_known(str(known)))
    assert status == 0
    assert text.splitlines()[-1] == "mpi4py-suite: 1 passed, 0 failed, 1 skipped, 2 known differences"


def test_a_time_out_is_told_from_a_crash(tmp_path):
    plain = record(tmp_path / "plain", both_ranks(BASE))
    wrapped = record(tmp_path / "wrapped", both_ranks(BASE), status="124", crash_in=(1, "test_c"))
    text, status = compare.report(plain, wrapped, RANKS)
    assert status == 1 and "TestFake.test_c: passed (4 subtests skipped) -> timed out (2 subtests skipped)" in text


def test_written_known_file_makes_the_same_runs_pass(tmp_path):
    plain = record(tmp_path / "plain", both_ranks(BASE))
    wrapped = record(tmp_path / "wrapped", both_ranks({**BASE, "a": "error"}))
    ended = record(tmp_path / "ended", both_ranks(BASE), status="139", crash_in=(0, "test_b"))
    for candidate, listed in ((wrapped, "test_fake.TestFake.test_a  # passed -> error [TypeError: no such thing]"),
                              (ended, "test_fake.*  # the job ended early: exit 139")):
        differences = compare.compare(plain, candidate, RANKS)[1]
        known = tmp_path / "known.txt"
        known.write_text(compare.known_file_text(differences, candidate))
        assert listed in known.read_text().splitlines()
        assert compare.report(plain, candidate, RANKS, known=compare.read_known(str(known)))[1] == 0


@pytest.mark.parametrize("arg, typecode, shape", [
    (-1, "B", 5), (-1, "H", None), (2 ** 40 + 3, "i", 2), (1.75, "b", 3), (7, "?", 2), (-1, "d", (2, 3)),
    ([1, -2, 300], "B", None), (range(5), "f", None), ([True, False], "?", None), (1 + 2j, "D", 2),
])
def test_cupy_backend_fill_converts_like_the_numpy_backend(arg, typecode, shape):
    class Array:
        __init__ = runner.converting_init(numpy)
    want = numpy.zeros(() if shape is None and isinstance(arg, (int, float, complex)) else
                       shape if shape is not None else len(arg), typecode)
    want[...] = numpy.asarray(list(arg) if isinstance(arg, range) else arg).astype(typecode)
    got = Array(arg, typecode, shape).array
    assert got.dtype == numpy.dtype(typecode) and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_python_ints_out_of_range_are_what_the_fix_is_for():
    # NumPy 2 (like cupy 14) refuses to store a Python int its type cannot hold; mpi4py's
    # cupy backend does exactly that when it poisons unsigned receive buffers with -1.
    with pytest.raises(OverflowError):
        numpy.zeros(3, "B").fill(-1)
    class Array:
        __init__ = runner.converting_init(numpy)
    assert Array(-1, "B", 3).array.tolist() == [255, 255, 255]
    source = numpy.array([1, -1], "h")
    assert Array(source, "H", None).array.tolist() == [1, 65535]  # an array argument: astype
