"""Diagnostics in the spirit of NCCL_DEBUG: HPCOLLS_DEBUG=WARN|INFO|TRACE, rank-prefixed, stderr.

The rank prefix is taken from the launcher's environment so that logging works before (and
without) an MPI communicator; `set_rank` refines it once a communicator is known.
"""
import os
import socket
import sys

from . import settings

LEVELS = {"NONE": 0, "WARN": 1, "INFO": 2, "TRACE": 3}
_once_keys = set()


def _launcher_rank():
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "MV2_COMM_WORLD_RANK"):
        if var in os.environ:
            return os.environ[var]
    return "?"


def _parse_level(text):
    text = (text or "WARN").strip().upper()
    if text not in LEVELS:
        sys.stderr.write(f"hpcolls: HPCOLLS_DEBUG={text!r} is not one of {', '.join(LEVELS)}; using WARN\n")
        return LEVELS["WARN"]
    return LEVELS[text]


level = _parse_level(settings.get("HPCOLLS_DEBUG"))
_prefix = f"{socket.gethostname()}:{os.getpid()}:{_launcher_rank()}"


def set_rank(rank):
    global _prefix
    _prefix = f"{socket.gethostname()}:{os.getpid()}:{rank}"


def _emit(tag, msg):
    sys.stderr.write(f"{_prefix} hpcolls {tag} {msg}\n")
    sys.stderr.flush()


def warn(msg):
    if level >= LEVELS["WARN"]:
        _emit("WARN", msg)


def info(msg):
    if level >= LEVELS["INFO"]:
        _emit("INFO", msg)


def trace(msg):
    if level >= LEVELS["TRACE"]:
        _emit("TRACE", msg)


def info_once(key, msg):
    """Log a decision the first time it is made (per process), e.g. one selection per size class."""
    if level >= LEVELS["INFO"] and key not in _once_keys:
        _once_keys.add(key)
        _emit("INFO", msg)


def warn_once(key, msg):
    """Warn the first time (per process) a condition is met, e.g. a setting that will crash a call."""
    if level >= LEVELS["WARN"] and key not in _once_keys:
        _once_keys.add(key)
        _emit("WARN", msg)
