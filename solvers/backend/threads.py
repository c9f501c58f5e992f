"""Keeping BLAS threads from oversubscribing the cores shared by several MPI ranks.

numpy/scipy's OpenBLAS starts one thread per core in *every* rank; with 4 ranks on 2 cores
the threads spin against each other and a solve gets ~30x slower. Environment variables only
work before numpy is imported, which is too late for ``python -m solvers.sygvd``, so the
thread count of each OpenBLAS already loaded is set through its C API (as threadpoolctl does).
"""
import ctypes
import os
import re

_SETTERS = ("openblas_set_num_threads", "openblas_set_num_threads64_",
            "scipy_openblas_set_num_threads", "scipy_openblas_set_num_threads64_")
_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _loaded_openblas():
    try:
        with open("/proc/self/maps") as maps:
            return sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", maps.read())))
    except OSError:
        return []


def limit_blas_threads(count):
    """Set every loaded OpenBLAS to ``count`` threads; returns how many libraries were set."""
    done = 0
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(int(count))
                done += 1
                break
    return done


def share_cores(ranks_on_node):
    """Give each of ``ranks_on_node`` ranks an equal share of this node's cores for BLAS,
    unless the user already chose through the environment. Returns a line for the header."""
    chosen = [f"{var}={os.environ[var]}" for var in _ENV if var in os.environ]
    if chosen:
        return f"left as set by the environment ({', '.join(chosen)})"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = max(1, (cores or 1) // max(1, ranks_on_node))
    libs = limit_blas_threads(threads)
    return (f"{threads} per rank ({cores} cores, {ranks_on_node} ranks on this node; "
            f"{libs} OpenBLAS libraries set)")
