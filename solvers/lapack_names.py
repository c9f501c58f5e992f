"""LAPACK's names for the solver's stages and drivers, by dtype.

Real symmetric problems use the sy/or routines, complex Hermitian ones the he/un routines; the
stage report names what ran (``hetrd`` for complex), with the precision letter where a single
library call is meant (``zhegvd``).
"""
import numpy as np

_HERMITIAN = {"sygst": "hegst", "sytrd": "hetrd", "ormtr": "unmtr", "syevd": "heevd",
              "sygvd": "hegvd", "sy2sb": "he2hb", "sb2st": "hb2st",
              "ormtr_sb2st": "unmtr_hb2st", "ormtr_sy2sb": "unmtr_he2hb",
              "syevr": "heevr", "syevx": "heevx", "sygvx": "hegvx"}
_PRECISION = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
              np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


def lapack_name(name, dtype):
    """The routine ``name`` (given by its real symmetric name) for data of ``dtype``."""
    return _HERMITIAN.get(name, name) if np.dtype(dtype).kind == "c" else name


def routine(name, dtype):
    """``lapack_name`` with LAPACK's precision letter: routine('sygvd', complex128) = 'zhegvd'."""
    return _PRECISION[np.dtype(dtype)] + lapack_name(name, dtype)
