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

    Matrix Market 'symmetric' and 'hermitian' files store one triangle; scipy.io.mmread expands
    them, so the result is always the full matrix. Real or complex; sparse (coordinate) files
    are densified.
    """
    if os.path.isdir(path):
        raise InputError(f"cannot read {path!r}: it is a directory, expected a .npy or Matrix "
                         f"Market file")
    if not os.path.isfile(path):
        raise InputError(f"cannot read {path!r}: no such file")
    try:
        if path.endswith(".npy"):
            data = _load_npy(path)
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
    if not (np.issubdtype(data.dtype, np.number) and data.dtype.kind in "iufc"):
        raise InputError(f"{path!r} has dtype {data.dtype}, expected real or complex numbers")
    return data


def _load_npy(path):
    """np.load of a .npy file, refusing anything else with our message (numpy's own, for a text
    file, is advice about pickles)."""
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic != b"\x93NUMPY":
        raise InputError(f"cannot read {path!r}: not a .npy file (no NumPy header); write it "
                         f"with numpy.save, or use a Matrix Market file")
    return np.load(path, allow_pickle=False)


def write_matrix(path, a, symmetric=False):
    """Write a dense matrix as .npy or Matrix Market (``symmetric`` stores one triangle: a
    'symmetric' file for real data, 'hermitian' for complex)."""
    a = np.asarray(a)
    if path.endswith(".npy"):
        np.save(path, a)
    elif path.endswith(MATRIX_MARKET_SUFFIXES):
        import scipy.io
        kind = ("hermitian" if np.iscomplexobj(a) else "symmetric") if symmetric else "general"
        scipy.io.mmwrite(path, a, symmetry=kind)
    else:
        raise InputError(f"cannot write {path!r}: use a .npy or Matrix Market suffix")


def results_path(path):
    """The file np.savez writes for ``path`` (it appends .npz to any other name)."""
    return path if path.endswith(".npz") else path + ".npz"


def check_writable(path):
    """InputError unless results can be written to ``path`` (checked before any solve, so a bad
    path does not lose a finished computation). The file itself is opened for appending (and
    removed again if it did not exist): permission bits say nothing to root, and some folders
    (/proc, read-only mounts) refuse new files to everyone."""
    target = results_path(path)
    if os.path.isdir(path) or os.path.isdir(target):
        raise InputError(f"cannot write results to {path!r}: it is a directory (name a file, "
                         f"e.g. {os.path.join(path, 'eigenpairs.npz')!r})")
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise InputError(f"cannot write results to {target!r}: no directory {folder!r}")
    existed = os.path.exists(target)
    try:
        with open(target, "ab"):
            pass
        if not existed:
            os.remove(target)
    except OSError as exc:
        raise InputError(f"cannot write results to {target!r}: {exc.strerror or exc}") from None
    return target


def write_results(path, eigenvalues, eigenvectors=None, **meta):
    """Save eigenvalues ('w') and, if given, eigenvectors ('z', columns) as .npz, in the dtypes
    given; returns the path written (results_path)."""
    arrays = {"w": np.asarray(eigenvalues)}
    if eigenvectors is not None:
        arrays["z"] = np.asarray(eigenvectors)
    arrays.update({key: np.asarray(value) for key, value in meta.items()})
    np.savez(path, **arrays)
    return results_path(path)
