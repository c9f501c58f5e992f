"""Keeping BLAS threads from oversubscribing the cores shared by several MPI ranks.

numpy/scipy's OpenBLAS starts one thread per core in *every* rank; with 4 ranks on 2 cores
the threads spin against each other and a solve gets many times slower. Environment variables only
work before numpy is imported, which is too late for ``python -m solvers.sygvd``, so the
thread count of each OpenBLAS already loaded is set through its C API (as threadpoolctl does).
A rank's share can also be lent to a pool of its own threads (blas_threads_lent), each then
calling BLAS with one thread; and a rank that solves a problem alone while the others of its
node wait idle (the single-rank route of small problems) may borrow their shares
(node_cores_lent).

Every entry point applies the same policy (policy_for): the CLI, solvers.eigh and the drivers on
DistMatrix inputs. It is decided once per communicator and kept as an MPI attribute of it, so
every rank of the communicator makes the one collective call (Split_type) at the same time.
"""
import ctypes
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass

# Each OpenBLAS build exports one of these (with "set" or "get" filled in).
_NAMES = ("openblas_{}_num_threads", "openblas_{}_num_threads64_",
          "scipy_openblas_{}_num_threads", "scipy_openblas_{}_num_threads64_")
_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _loaded_openblas():
    try:
        with open("/proc/self/maps") as maps:
            return sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", maps.read())))
    except OSError:
        return []


def _openblas_controls():
    """(get, set) of the thread count of every loaded OpenBLAS."""
    controls = []
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _NAMES:
            get, set_ = getattr(lib, name.format("get"), None), getattr(lib, name.format("set"), None)
            if get is not None and set_ is not None:
                controls.append((get, set_))
                break
    return controls


def limit_blas_threads(count):
    """Set every loaded OpenBLAS to ``count`` threads; returns how many libraries were set."""
    controls = _openblas_controls()
    for _, set_ in controls:
        set_(int(count))
    return len(controls)


def _usable_cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@contextmanager
def blas_threads_lent():
    """Lend this rank's BLAS threads to a pool of workers: yields how many workers to run, the
    thread count BLAS had (share_cores' share, the environment's choice, or OpenBLAS' own
    default of every core), with BLAS at one thread per call until the block ends. Without an
    OpenBLAS to set (so possibly a threaded BLAS under each worker), one worker."""
    controls = _openblas_controls()
    before = [int(get()) for get, _ in controls]
    for _, set_ in controls:
        set_(1)
    try:
        yield max(1, min(max(before, default=1), _usable_cores()))
    finally:
        for (_, set_), count in zip(controls, before):
            set_(count)


@dataclass(frozen=True)
class ThreadPolicy:
    """The BLAS threads of one rank: ``threads`` per rank as set here (None when the environment
    chose), ``cores`` this rank may run on, ``node_ranks`` ranks sharing its node, and a line for
    the run header."""
    threads: object
    cores: int
    node_ranks: int
    line: str


def node_policy(ranks_on_node):
    """Give each of ``ranks_on_node`` ranks an equal share of this node's cores for BLAS,
    unless the user already chose through the environment; returns the ThreadPolicy."""
    cores = _usable_cores()
    chosen = [f"{var}={os.environ[var]}" for var in _ENV if var in os.environ]
    if chosen:
        return ThreadPolicy(None, cores, ranks_on_node,
                            f"left as set by the environment ({', '.join(chosen)})")
    threads = max(1, cores // max(1, ranks_on_node))
    libs = limit_blas_threads(threads)
    return ThreadPolicy(threads, cores, ranks_on_node,
                        f"{threads} per rank ({cores} cores, {ranks_on_node} ranks on this node; "
                        f"{libs} OpenBLAS libraries set)")


def share_cores(ranks_on_node):
    """node_policy's header line."""
    return node_policy(ranks_on_node).line


_POLICY_KEY = []   # the MPI attribute key, created on first use


def policy_for(comm):
    """This rank's ThreadPolicy in ``comm`` (collective on first use per communicator: every
    rank of it must call; later calls are local)."""
    from mpi4py import MPI   # here, not at the top: its import initializes MPI (solvers/__init__.py)
    if not _POLICY_KEY:
        _POLICY_KEY.append(MPI.Comm.Create_keyval())
    policy = comm.Get_attr(_POLICY_KEY[0])
    if policy is None:
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            policy = node_policy(node.Get_size())
        finally:
            node.Free()
        comm.Set_attr(_POLICY_KEY[0], policy)
    return policy


@contextmanager
def node_cores_lent(policy):
    """Inside the block, BLAS runs with every core of this rank (the shares of the other ranks
    of its node, which must be waiting idle meanwhile); the policy's share again after. Left
    alone where the environment chose the threads."""
    if policy.threads is None or policy.node_ranks < 2:
        yield
        return
    limit_blas_threads(policy.cores)
    try:
        yield
    finally:
        limit_blas_threads(policy.threads)
