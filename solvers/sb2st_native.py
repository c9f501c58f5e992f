"""The bulge chasing of sb2st.py in solvers._kernels: on the host (C++ threads) for numpy runs,
on the GPU (one kernel) for cupy runs. Returns (True, what ran) or (False, why not), in which
case sb2st runs its Python steps."""
from .backend.arrays import is_numpy
from .sytrd_native import kernels


def chase(work, layout, v, tau, coll):
    native, why = kernels()
    if native is None:
        return False, f"python ({why})"
    if not hasattr(native, "sb2st_host"):
        return False, "python (solvers._kernels has no sb2st: rebuild it)"
    return False, "python (native chase not wired yet)"
