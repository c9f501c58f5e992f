"""One panel of sy2sb, factored both ways: python -m solvers.bench.panel_qr [--m 16320 8128 1024]
[--w 64] [--dtype float64 complex128] [--device auto|cpu|gpu] [--repeat 50].

Per dtype and panel height m (w columns, random Gaussian entries), the median microseconds of
--repeat calls after a warm-up, the device synchronized after each call, of geqrf
(panel_qr.geqrf_panel) and of CholeskyQR2 with Householder reconstruction as sy2sb runs it
(panel_qr.panel_qr(..., "cholqr2"): on the GPU for w <= 64 one native call, elsewhere BLAS /
LAPACK calls around the native w × w part), on the same panels in the same run; then
CholeskyQR2's parts timed the same way: on the GPU for w <= 64 the composed path whole
("composed": the A/B against the one call), and the composed path's steps: the Gram matrix AᴴA,
its Cholesky factorization, the triangular solve Q₁ = A R₁⁻¹, Q₁ᴴQ₁, the w × w part (one native
call, with its status read back) and V₂ = Q₁[w:] K; on the GPU for w <= 64 also the one call's
first-pass w × w part ("first w×w": the first Cholesky and R₁⁻¹). Parts that each wait for the
device add up to more than the whole, which queues them back to back. What sy2sb's
plan.AUTO_PANEL is chosen from is sy2sb as a whole (python -m solvers.bench.sy2sb --panel
cholqr2 geqrf); this shows why.
"""
import argparse
import statistics
import sys
import time

import numpy as np

from ..backend import arrays
from ..backend.arrays import get_cupy, module_for_device, synchronize
from ..kernels import kernels
from ..panel_qr import _factors, composed_cholqr2, geqrf_panel, panel_qr


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m solvers.bench.panel_qr", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", type=int, nargs="+", default=[16320, 8128, 1024],
                   help="panel heights (default 16320 8128 1024: sy2sb's first, middle and late "
                        "panels at n = 16384)")
    p.add_argument("--w", type=int, default=64, help="panel width, the bandwidth (default 64)")
    p.add_argument("--dtype", nargs="+", choices=("float32", "float64", "complex64", "complex128"),
                   default=["float64", "complex128"])
    p.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto",
                   help="where the panels live (default auto: the GPU when cupy sees one)")
    p.add_argument("--repeat", type=int, default=50, help="timed calls per median (default 50)")
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args(argv)
    if args.w < 1 or any(m < args.w for m in args.m):
        p.error(f"every --m must be at least --w = {args.w} (CholeskyQR2 needs a tall panel)")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    return args


def _array_module(device):
    if device != "auto":
        return module_for_device(device)
    try:
        cupy = get_cupy()
        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else np
    except Exception:   # no cupy, or no driver / device: the CPU
        return np


WARM_UP_CALLS = 3


def _median_us(xp, call, repeat):
    for _ in range(WARM_UP_CALLS):
        call()
    synchronize(xp)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        synchronize(xp)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def _parts(xp, native, panel, w):
    """CholeskyQR2's steps as panel_qr runs them, each a call to time (its inputs made once)."""
    gram = arrays.adjoint_product(xp, panel, panel)
    if arrays.is_numpy(xp):
        l1, _ = arrays.cholesky_lower_whole(xp, gram)
    else:
        l1, _ = arrays.cholesky_lower_queued(xp, gram)
    q1 = xp.ascontiguousarray(arrays.solve_lower_adjoint_right(xp, l1, panel))
    gram2 = arrays.adjoint_product(xp, q1, q1)
    l1 = xp.ascontiguousarray(l1)
    out = _factors(xp, native, gram2, q1[:w], l1)
    if out is None:
        return None
    factor = arrays.cholesky_lower_whole if arrays.is_numpy(xp) else arrays.cholesky_lower_queued
    v2 = xp.zeros((panel.shape[0] - w, w), dtype=panel.dtype)
    parts = {
        "gram": lambda: arrays.adjoint_product(xp, panel, panel),
        "potrf": lambda: factor(xp, gram),
        "trsm": lambda: arrays.solve_lower_adjoint_right(xp, l1, panel),
        "gram2": lambda: arrays.adjoint_product(xp, q1, q1),
        "w×w": lambda: _factors(xp, native, gram2, q1[:w], l1),
        "V₂": lambda: arrays.add_product(xp, v2, q1[w:], out[w:2 * w]),
    }
    if arrays.is_numpy(xp) or w > native.PANEL_CHOLQR2_MAX_WIDTH:
        return parts
    return {"composed": lambda: composed_cholqr2(xp, native, panel), **parts,
            "first w×w": _first_factor_call(xp, native, xp.ascontiguousarray(gram))}


def _first_factor_call(xp, native, gram):
    """The GPU's first-pass w × w part (panel_first_factor), its status read back."""
    w = gram.shape[0]
    l1, r1_inverse, status = xp.empty_like(gram), xp.empty_like(gram), xp.empty((), dtype=np.int32)

    def call():
        native.panel_first_factor(native.DTYPES[gram.dtype.name], w, gram.data.ptr, l1.data.ptr,
                                  r1_inverse.data.ptr, status.data.ptr, device=xp.cuda.Device().id,
                                  stream=xp.cuda.get_current_stream().ptr)
        return int(status)
    return call


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    native, why = kernels()
    if native is None:
        raise SystemExit(f"solvers.bench.panel_qr: CholeskyQR2's w × w part needs {why}")
    xp = _array_module(args.device)
    where = "CPU (numpy)" if xp is np else \
        xp.cuda.runtime.getDeviceProperties(xp.cuda.Device().id)["name"].decode()
    print(f"# solvers.bench.panel_qr: w = {args.w}, median µs of {args.repeat} calls after {WARM_UP_CALLS} "
          f"warm-up calls, the device synchronized after each call; {where}")
    print("| dtype | m | geqrf µs | CholeskyQR2 µs | × geqrf's | CholeskyQR2's parts µs (each synchronized) |")
    print("| --- | --- | --- | --- | --- | --- |")
    rng = np.random.default_rng(args.seed)
    for dtype in args.dtype:
        for m in args.m:
            host = rng.standard_normal((m, args.w))
            if np.dtype(dtype).kind == "c":
                host = host + 1j * rng.standard_normal((m, args.w))
            panel = xp.asarray(host.astype(dtype))
            geqrf = _median_us(xp, lambda: geqrf_panel(xp, panel), args.repeat)
            used = panel_qr(xp, panel, "cholqr2")[4]
            cholqr2 = _median_us(xp, lambda: panel_qr(xp, panel, "cholqr2"), args.repeat)
            parts = _parts(xp, native, panel, args.w)
            shown = ", ".join(f"{name} {_median_us(xp, call, args.repeat):.0f}" for name, call in parts.items()) \
                if parts else "(the panel went to geqrf)"
            label = f"{cholqr2:.0f}" if used == "cholqr2" else f"{cholqr2:.0f} (went to geqrf)"
            print(f"| {dtype} | {m} | {geqrf:.0f} | {label} | {cholqr2 / geqrf:.2f} | {shown} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
