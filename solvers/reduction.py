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

# The order from which 'auto' picks two-stage, by device and kind of data; None: never. GPU:
# measured on one H100 (docs/PERFORMANCE.md #27, python -m solvers.bench --n 4096 6144 8192
# --reduction 1stage 2stage --repeat 3, 2026-12-06 evening): two-stage took 0.94x one-stage's time
# at 4096 for float64 jobz V (0.254 against 0.269 s), 0.70x at 6144, 0.62x at 8192; for
# complex128 0.79x, 0.75x, 0.71x. 4096 is the smallest order measured; below it one-stage's fewer
# flops are kept. CPU: on the GPU machine's 16 cores (nb 32) two-stage took 1.5x one-stage's time
# at 2048 and 2.3x at 4096, and on 2 cores 1.6x at 2048 (4.03 against 2.51 s, after larft's T
# moved to numpy's LAPACK on the host), so one-stage.
TWO_STAGE_FROM = {("gpu", "real"): 4096, ("gpu", "complex"): 4096,
                  ("cpu", "real"): None, ("cpu", "complex"): None}

# The bandwidth b when none is given: the largest divisor of nb up to this. GPU: 64, the largest
# whose chase runs on the device: at b = 128 a chase block needs 269840 bytes of shared memory
# (more than an H100 gives a block), so sb2st ran on the host, 14.3 s at n = 16384, though sy2sb
# took 0.37 s against 0.56 s and Q2 0.51 s against 0.88 s (docs/PERFORMANCE.md #27, 2026-12-06).
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
        return "1stage", f"auto: one-stage for {where} (two-stage measured slower there)"
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
