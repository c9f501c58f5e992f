"""Which way a problem is solved: distributed over the grid, or whole on one rank.

    distributed  the stages (potrf, sygst/hegst, sytrd/hetrd, ...) over the whole grid
    single       one LAPACK / cuSOLVER call for the whole problem on rank 0 (whole.py), the
                 result handed to every rank; at one rank, that call alone
    auto         single at one rank, and on CPUs below the measured crossover order for the
                 rank count; distributed otherwise

The crossovers were measured on the 2-core development box (docs/PERFORMANCE.md, "single-rank
route"): below them, gathering the problem to one rank, solving it there with every core of the
node (the other ranks wait idle) and handing back the result is faster than the distributed
stages. Rank counts between the measured ones use the nearest measured count below. On GPUs
only the one-rank choice is made (several GPU ranks: not measured, so distributed).
"""
from .errors import InputError

METHODS = ("auto", "distributed", "single")

# Orders below which 'single' beats 'distributed' on CPU, by rank count (measured).
CPU_CROSSOVER = {2: 4096, 4: 4096}


def choose_method(requested, n, nranks, on_gpu):
    """(method, why) for ``requested`` in METHODS, a problem of order ``n`` on ``nranks``."""
    if requested not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}; got {requested!r}")
    if requested != "auto":
        return requested, "requested"
    if nranks == 1:
        return "single", "auto: one rank"
    if on_gpu:
        return "distributed", "auto: several GPU ranks"
    measured = max([p for p in CPU_CROSSOVER if p <= nranks], default=min(CPU_CROSSOVER))
    crossover = CPU_CROSSOVER[measured]
    if n < crossover:
        return "single", f"auto: n = {n} < {crossover}, the crossover measured at {measured} CPU ranks"
    return "distributed", f"auto: n = {n} >= {crossover}, the crossover measured at {measured} CPU ranks"
