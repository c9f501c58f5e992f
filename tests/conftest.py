"""Shared by tests/cpu, tests/mpi and tests/gpu. Under mpiexec every rank runs every test, in
the same order (tests/mpi and tests/gpu are run that way by tests/run.sh).

A test that fails on one rank would leave the others blocked inside a collective, so a failure
is printed at once (rank-prefixed) and the whole job is aborted: mpiexec then exits non-zero
and no rank hangs until the CI time-out.
"""
import os
import sys

import pytest

from mpi4py import MPI


def pytest_runtest_logreport(report):
    if not report.failed:
        return
    comm = MPI.COMM_WORLD
    if comm.Get_size() == 1:
        return
    head = f"[rank {comm.Get_rank()}/{comm.Get_size()}] FAILED {report.nodeid} ({report.when})"
    sys.stderr.write(f"\n{head}\n{report.longreprtext}\n[rank {comm.Get_rank()}] aborting all ranks\n")
    sys.stderr.flush()
    _record_abort(head, report.longreprtext)
    comm.Abort(1)


def _record_abort(head, text):
    """The aborted job writes no JUnit report: tests/run.sh names a file (HPCOLLS_TEST_ABORT_LOG)
    where the failure is kept, to be counted and printed again beside its closing summary."""
    path = os.environ.get("HPCOLLS_TEST_ABORT_LOG")
    if not path:
        return
    errors = [line for line in text.splitlines() if line.startswith("E ")][:12]
    with open(path, "a") as log:
        log.write("\n".join([head, *errors]) + "\n")


@pytest.fixture
def comm():
    """MPI.COMM_WORLD, with a barrier after the test so one slow rank cannot leak into the next."""
    world = MPI.COMM_WORLD
    yield world
    world.Barrier()


@pytest.fixture
def rng():
    """A numpy Generator from a fresh seed (solver_testing.shared_seed; HPCOLLS_TEST_SEED=<seed>
    replays one), printed: pytest shows it beside a failure, so the data can be drawn again."""
    import numpy as np
    from solver_testing import shared_seed
    seed = shared_seed()
    print(f"seed={seed}")
    return np.random.default_rng(seed)


def pytest_report_header(config):
    comm = MPI.COMM_WORLD
    # Open MPI's version string ends in the C string's NUL (hpcolls/tools/info.py says more).
    library = MPI.Get_library_version().split("\0", 1)[0].splitlines()[0]
    return f"MPI: {comm.Get_size()} ranks, library {library}"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if MPI.COMM_WORLD.Get_rank() == 0:
        return
    # Only rank 0 writes the JUnit report and prints progress: a failure on any other rank is
    # printed by pytest_runtest_logreport above and aborts the whole job, so nothing is lost.
    config.option.xmlpath = None


def pytest_sessionstart(session):
    if MPI.COMM_WORLD.Get_rank() == 0 or os.environ.get("HPCOLLS_TEST_ALL_RANKS_VERBOSE") == "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        session.config.pluginmanager.unregister(reporter)
