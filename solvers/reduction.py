"""Which reduction to tridiagonal form the distributed stages use, and its bandwidth.

    1stage  sytrd / hetrd: Householder tridiagonalization, one symmetric matrix-vector product
            over the trailing matrix per column (memory-bound), then ormtr / unmtr
    2stage  sy2sb / he2hb (dense → band b, GEMMs), sb2st / hb2st (band → tridiagonal, bulge
            chasing), then two back-transformations: ormtr_sb2st (Q2, on each rank's whole
            columns) and ormtr_sy2sb (Q1, like ormtr)
    auto    2stage from the order TWO_STAGE_FROM gives for the device and the kind of data (real
            or complex), 1stage otherwise

One-stage stays the reference and the small-n path: its flops are fewer (4n³/3 against
4n³/3 for sy2sb plus about 2n³(b+g-1)/b more in the back-transformation with vectors), so
two-stage wins only where sytrd's memory-bound products dominate.
"""
from .errors import InputError

REDUCTIONS = ("auto", "1stage", "2stage")

# The order from which 'auto' picks two-stage, by device and kind of data; None: never. GPU,
# real: measured on one H100 (docs/PERFORMANCE.md, 2026-12-05, python -m solvers.bench
# --reduction 1stage 2stage): float64 jobz V two-stage 1.29x one-stage's time at n = 8192, 0.94x
# at 16384 (0.65x for the lowest 10 %, 0.77x with jobz N). The crossover lies between the two
# measured orders; 16384 is the first measured where two-stage wins. GPU, complex: two-stage lost
# at 8192 (1.15x) and 16384 was not measured, so one-stage. CPU: not measured on a machine with
# enough cores to say (the 2-core box is no guide), so one-stage.
TWO_STAGE_FROM = {("gpu", "real"): 16384, ("gpu", "complex"): None,
                  ("cpu", "real"): None, ("cpu", "complex"): None}

# The bandwidth b when none is given: the largest divisor of nb up to this (PLACEHOLDER for the
# GPU: the cost of the bulge chasing and of Q2's wasted flops grows with b, sy2sb's GEMMs get
# more efficient with it).
BAND_TARGET = {"gpu": 64, "cpu": 32}


def choose_reduction(requested, n, on_gpu, complex_data=False):
    """(reduction, why) for ``requested`` in REDUCTIONS and a problem of order n (complex
    Hermitian where ``complex_data``)."""
    if requested not in REDUCTIONS:
        raise InputError(f"reduction must be one of {', '.join(REDUCTIONS)}; got {requested!r}")
    if requested != "auto":
        return requested, "requested"
    device, kind = ("gpu" if on_gpu else "cpu"), ("complex" if complex_data else "real")
    start = TWO_STAGE_FROM[device, kind]
    where = f"{kind} data on {device.upper()}"
    if start is None:
        return "1stage", f"auto: no two-stage crossover measured for {where}"
    if n >= start:
        return "2stage", f"auto: n = {n} >= {start} for {where}"
    return "1stage", f"auto: n = {n} < {start} for {where}"


def band_for(band, nb, on_gpu):
    """The bandwidth: ``band`` checked (a positive divisor of nb), or the default."""
    from .sy2sb import check_band, default_band
    if band is None:
        return default_band(nb, BAND_TARGET["gpu" if on_gpu else "cpu"])
    try:
        check_band(band, nb)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return band
