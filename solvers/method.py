"""Which way a problem is solved: distributed over the grid, or whole on one rank.

    distributed  the stages (potrf, sygst/hegst, sytrd/hetrd, ...) over the whole grid
    single       one LAPACK / cuSOLVER call for the whole problem on rank 0 (whole.py), the
                 result handed to every rank; at one rank, that call alone
    replicated   (solvers.eigh only, where every rank holds the whole problem) every rank makes
                 that call itself: no messages at all; identical input to the same library gives
                 every rank the same bits, as the replicated tridiagonal solve already assumes
    auto         at one rank: single. On CPUs: replicated below REPLICATED_BELOW (eigh; the
                 drivers, whose input is distributed, take single), single below CPU_CROSSOVER,
                 distributed above. On several GPU ranks: distributed

The orders were measured on the 2-core development box (docs/PERFORMANCE.md, "methods"): below
CPU_CROSSOVER, gathering the problem to one rank, solving it there with every core of the node
(the other ranks wait idle) and handing back the result is faster than the distributed stages;
below REPLICATED_BELOW, the messages of that hand-off cost more than solving on every rank.
Rank counts between the measured ones use the nearest measured count below. On several GPU
ranks nothing was measured, so auto stays distributed there.
"""
from .errors import InputError

METHODS = ("auto", "distributed", "single", "replicated")

# By CPU rank count (measured 2026-12-04, docs/PERFORMANCE.md): 'single' beat 'distributed' at
# every order measured (up to 3000 at 2 ranks, 2000 at 4), so the crossover is at least that;
# 4096 is the next power of two, unmeasured beyond.
CPU_CROSSOVER = {2: 4096, 4: 4096}
# The smallest measured order at which 'single' beat 'replicated' (solvers.eigh only).
REPLICATED_BELOW = {2: 256, 4: 512}


def choose_method(requested, n, nranks, on_gpu, replicable=False):
    """(method, why) for ``requested`` in METHODS, a problem of order ``n`` on ``nranks``;
    ``replicable``: every rank holds the whole problem (solvers.eigh)."""
    if requested not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}; got {requested!r}")
    if requested == "replicated" and not replicable:
        raise InputError("method 'replicated' needs the whole problem on every rank "
                         "(solvers.eigh); distributed inputs take 'single'")
    if requested != "auto":
        return requested, "requested"
    if nranks == 1:
        return "single", "auto: one rank"
    if on_gpu:
        return "distributed", "auto: several GPU ranks"
    measured = max([p for p in CPU_CROSSOVER if p <= nranks], default=min(CPU_CROSSOVER))
    where = f"measured at {measured} CPU ranks"
    if replicable and n < REPLICATED_BELOW[measured]:
        return "replicated", f"auto: n = {n} < {REPLICATED_BELOW[measured]}, {where}"
    if n < CPU_CROSSOVER[measured]:
        return "single", f"auto: n = {n} < {CPU_CROSSOVER[measured]}, {where}"
    return "distributed", f"auto: n = {n} >= {CPU_CROSSOVER[measured]}, {where}"
