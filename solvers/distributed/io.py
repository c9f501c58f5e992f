"""Reading input matrices (.npy, Matrix Market) and writing results (.npz).

Reading happens on rank 0 only; the caller broadcasts the verdict (and scatters the data), so
an unreadable file gives one clear message instead of a different failure on every rank.
"""
import os

import numpy as np

from ..errors import InputError

MATRIX_MARKET_SUFFIXES = (".mtx", ".mm", ".mtx.gz", ".mm.gz")


def read_matrix(path):
    """A dense 2D numpy array from a .npy or Matrix Market file; InputError otherwise.

    Matrix Market 'symmetric' files store one triangle; scipy.io.mmread expands them, so the
    result is always the full matrix. Sparse (coordinate) files are densified.
    """
    if not os.path.isfile(path):
        raise InputError(f"cannot read {path!r}: no such file")
    try:
        if path.endswith(".npy"):
            data = np.load(path, allow_pickle=False)
        elif path.endswith(MATRIX_MARKET_SUFFIXES):
            import scipy.io
            data = scipy.io.mmread(path)
            if hasattr(data, "toarray"):
                data = data.toarray()
        else:
            raise InputError(f"cannot read {path!r}: expected a .npy or Matrix Market "
                             f"({', '.join(MATRIX_MARKET_SUFFIXES)}) file")
    except InputError:
        raise
    except Exception as exc:  # any parser error becomes one readable line
        raise InputError(f"cannot read {path!r}: {type(exc).__name__}: {exc}") from None
    data = np.asarray(data)
    if data.ndim != 2:
        raise InputError(f"{path!r} holds a {data.ndim}-D array, expected a matrix")
    if np.iscomplexobj(data):
        raise InputError(f"{path!r} is complex; only real symmetric problems are supported")
    if not (np.issubdtype(data.dtype, np.floating) or np.issubdtype(data.dtype, np.integer)):
        raise InputError(f"{path!r} has dtype {data.dtype}, expected real numbers")
    return data


def write_matrix(path, a, symmetric=False):
    """Write a dense matrix as .npy or Matrix Market (``symmetric`` stores one triangle)."""
    if path.endswith(".npy"):
        np.save(path, np.asarray(a))
    elif path.endswith(MATRIX_MARKET_SUFFIXES):
        import scipy.io
        scipy.io.mmwrite(path, np.asarray(a), symmetry="symmetric" if symmetric else "general")
    else:
        raise InputError(f"cannot write {path!r}: use a .npy or Matrix Market suffix")


def write_results(path, eigenvalues, eigenvectors=None, **meta):
    """Save eigenvalues ('w') and, if given, eigenvectors ('z', columns) as .npz."""
    arrays = {"w": np.asarray(eigenvalues)}
    if eigenvectors is not None:
        arrays["z"] = np.asarray(eigenvectors)
    arrays.update({key: np.asarray(value) for key, value in meta.items()})
    np.savez(path, **arrays)
