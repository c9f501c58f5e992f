"""solvers._kernels, the solver's own extension module (native/solvers: its GPU kernels and
their host builds), loaded here once for every module that calls it.

It is built with nvcc at install; a CPU-only install has none, and every caller then says why
with MISSING's words: the numpy paths run (sytrd's Python loop, sb2st's Python steps, geqrf
panels), or a stage that needs it fails with that reason (stein's inverse iteration).
"""


def kernels():
    """(solvers._kernels, None), or (None, why it is not there)."""
    try:
        # Imported at first use, not with the package: an extension that may be missing, and
        # `import solvers` loads no CUDA code.
        from . import _kernels
    except ImportError as exc:
        return None, f"solvers._kernels not built ({exc}): the package was installed without nvcc"
    return _kernels, None
