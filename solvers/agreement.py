"""The ranks of a solver entry agree on what they were given before any other message.

Every entry of the solver (solvers.eigh, solvers.cholesky, sygvd, syevd, the command line) is
collective, and its stages' messages assume that the ranks hold one problem. Ranks given
different problems (another order, dtype or subset, another matrix) would otherwise exchange
messages of different sizes and hang inside MPI, or solve a mixture of problems and return a
wrong answer without an error. So each entry first gathers every rank's account of its call in
one pickled allgather (mpi4py's lowercase allgather: MPI learns each rank's size first, so no
rank can truncate another's message): the arguments, the matrices' shapes and dtypes, a
fingerprint of sampled entries of each whole matrix the ranks should hold alike, and the error
this rank's own checks raised, if any. Every rank decides from the same gathered list, so either
all go on or all raise the same error, which names what differs and on which ranks.

The fingerprint hashes a fixed sample of the referenced triangle (entries the solver reads):
a difference confined to entries outside the sample goes unseen, which is its price for costing
microseconds at any order (docs/PERFORMANCE.md#solver-rank-agreement).
"""
import hashlib
import importlib

import numpy as np

from .backend.arrays import is_numpy, to_host
from .errors import InputError, RankMismatchError

# Entries of each whole matrix a fingerprint reads (and as many of its diagonal).
SAMPLE = 4096
# A multiplier coprime to every order, so that a row's sampled column moves over the row.
_SPREAD = 2654435761


# _first_failure's verdict where every rank raised the same error.
_EVERY_RANK_ALIKE = object()


def fingerprint(xp, x, lower):
    """A short hash of SAMPLE entries spread over ``x``'s ``lower`` (or upper) triangle and of
    the diagonal entries of their rows (real parts: LAPACK never reads the imaginary ones);
    equal on ranks holding equal referenced triangles."""
    n = x.shape[0]
    k = np.arange(min(SAMPLE, n * n), dtype=np.int64)
    rows = k * n // max(len(k), 1)
    cols = (k * _SPREAD) % (rows + 1)
    if not lower:
        rows, cols = cols, rows
    if not is_numpy(xp):
        rows, cols = xp.asarray(rows), xp.asarray(cols)
    values = x[rows, cols]
    parts = [x[rows, rows].real, values.real]
    if values.dtype.kind == "c":
        parts.append(xp.where(rows != cols, values.imag, 0))
    sampled = xp.concatenate(parts)
    return hashlib.blake2b(np.ascontiguousarray(to_host(sampled)).tobytes(), digest_size=8).hexdigest()


class Agreement:
    """``with Agreement(comm, "solvers.eigh") as call:`` runs this rank's own checks, which
    record what the rank was given with ``call.record(name=value, ...)`` and may raise; on leaving
    the block every rank compares (one allgather) and raises the same error, or none."""

    def __init__(self, comm, entry):
        self.comm = comm
        self.entry = entry
        self.given = {"entry": entry}     # ranks in different entries' agreements differ here

    @property
    def comparing(self):
        """Whether there are other ranks to compare with (what only a comparison needs, such as a
        fingerprint, is skipped at one rank)."""
        return self.comm.Get_size() > 1

    def record(self, **given):
        self.given.update({name: _plain(value) for name, value in given.items()})

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if kind is not None and not issubclass(kind, Exception):
            return False          # KeyboardInterrupt, SystemExit: not a verdict to share
        if not self.comparing:
            return False
        # The class by name: any class can be named, not every one pickled.
        failure = None if error is None else (kind.__module__, kind.__qualname__, str(error))
        gathered = self.comm.allgather((self.given, failure))
        shared = _mismatch(self.entry, [given for given, _ in gathered]) or _first_failure(gathered)
        if shared is None or shared is _EVERY_RANK_ALIKE:
            return False          # nothing to share, or each rank raises its own, identical, error
        raise shared from error


def layout(matrix):
    """What the ranks must share of a DistMatrix (each holds its own blocks, so not entries):
    global shape, dtype, block sizes and source process, process grid; None stays None."""
    if matrix is None:
        return None
    d = matrix.desc
    return (d.m, d.n, matrix.dtype.name, d.mb, d.nb, d.rsrc, d.csrc,
            matrix.grid.nprow, matrix.grid.npcol)


def _plain(value):
    """Numbers, strings, None and tuples of them: what compares equal across ranks for equal
    arguments however a rank spelled them (numpy scalars, lists, arrays)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (bool, int, float, complex, str, type(None))):
        return value
    return repr(value)


def _first_failure(gathered):
    """The lowest failing rank's error, as its own class, the same on every rank."""
    failed = [(rank, failure) for rank, (_, failure) in enumerate(gathered) if failure is not None]
    if not failed:
        return None
    first = failed[0][1]
    alike = [rank for rank, failure in failed if failure == first]
    if len(alike) == len(gathered):
        return _EVERY_RANK_ALIKE
    where = f"on {_ranks(alike)} of {len(gathered)}"
    others = [rank for rank, failure in failed if failure != first]
    if others:
        where += f"; {_ranks(others)} raised other errors"
    return _rebuilt(*first[:2], f"{first[2]} ({where})")


def _rebuilt(module, name, message):
    """The error class ``module.name`` with ``message``; InputError where that class cannot be
    found or built from a message alone."""
    try:
        kind = getattr(importlib.import_module(module), name)
        error = kind(message)
    except Exception:
        return InputError(message)
    return error if isinstance(error, Exception) else InputError(message)


def _mismatch(entry, given):
    """RankMismatchError naming each argument whose value differs, with each value's ranks:
    among those every rank recorded (a rank whose checks failed early recorded fewer)."""
    names = [name for name in given[0] if all(name in g for g in given)]
    differences = []
    for name in names:
        values = [g[name] for g in given]
        if len(set(map(repr, values))) > 1:
            differences.append(f"{name}: {_by_value(values)}")
    if not differences:
        return None
    return RankMismatchError(
        f"{entry} was called with different problems on the ranks of one communicator (every "
        f"rank must pass the same arguments and the same matrices): {'; '.join(differences)}")


def _by_value(values):
    """'40 on ranks 0, 2-3, 45 on rank 1'."""
    groups = {}
    for rank, value in enumerate(values):
        groups.setdefault(repr(value), []).append(rank)
    return ", ".join(f"{text} on {_ranks(ranks)}" for text, ranks in groups.items())


def _ranks(ranks):
    """'rank 3', 'ranks 0, 2-4'."""
    spans, start = [], None
    for i, rank in enumerate(ranks):
        if start is None:
            start = rank
        if i + 1 == len(ranks) or ranks[i + 1] != rank + 1:
            spans.append(f"{start}" if start == rank else f"{start}-{rank}")
            start = None
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(spans)
