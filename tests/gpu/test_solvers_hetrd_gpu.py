"""The native column loop (solvers._kernels.sytrd_panel) on complex Hermitian matrices against
the Python reference loop (solvers/sytrd.py's _column_step) on the same cupy inputs: d, e, tau
and the stored reflectors agree to rounding, the loop's Q is unitary and Qᴴ A Q is its
tridiagonal to a Householder reduction's backward error, every rank gets the same bits and a
rerun gives them again. Runs as plain pytest (one rank) or under mpiexec (ranks sharing a GPU
need CUDA MPS)."""
import numpy as np
import pytest

from gpu_required import cupy_with_a_gpu

cupy = cupy_with_a_gpu()
pytest.importorskip("solvers._kernels", reason="solvers._kernels not built (nvcc at install)")

from mpi4py import MPI  # noqa: E402

from solvers.backend import Collectives  # noqa: E402
from solvers.backend.device import select_device  # noqa: E402
from solvers.distributed import DistMatrix  # noqa: E402
from solvers.sytrd import sytrd  # noqa: E402

COMM = MPI.COMM_WORLD
select_device(COMM)


def _hermitian(rng, n):
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return (a + a.conj().T) / 2   # an exactly real diagonal


def _reference_takes_complex():
    """Whether sytrd.py's Python loop, the reference, is the complex one (larfg with a real beta)."""
    from solvers.householder import larfg
    try:
        _, beta, _ = larfg(cupy, cupy.asarray([1 + 1j, 1], dtype=np.complex128))
    except TypeError:   # the real-only larfg: cupy's copysign has no complex loop
        return False
    return beta.dtype.kind == "f"


def _reduce(a, grid, coll, nb, native, product=None):
    c = DistMatrix.from_global(cupy.asarray(a), grid, nb)
    coll.reset()
    d, e, tau = sytrd(c, coll, native=native, product=product)
    loop = coll.stats["other"].notes["column_loop"]
    reflectors = cupy.asnumpy(c.to_global(coll))
    return [cupy.asnumpy(x) for x in (d, e, tau)], np.tril(reflectors, -1), loop


def _q_from_reflectors(v_cols, tau):
    """Q = H₀ H₁ ⋯ with Hⱼ = I - tauⱼ vⱼ vⱼᴴ, vⱼ = column j below the diagonal (its 1 stored)."""
    n = v_cols.shape[0]
    q = np.eye(n, dtype=np.complex128)
    for j in range(n - 1):
        v = np.zeros(n, dtype=np.complex128)
        v[j + 1:] = v_cols[j + 1:, j]
        q -= tau[j] * np.outer(q @ v, v.conj())
    return q


@pytest.mark.parametrize("kind", ["mpi", "hpcolls"])
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64], ids=["c128", "c64"])
@pytest.mark.parametrize("n, nb", [(1, 1), (2, 2), (20, 32), (45, 8), (130, 32), (300, 64)])
def test_native_hetrd_matches_the_python_reference(grid, seed, kind, dtype, n, nb):
    if not _reference_takes_complex():
        pytest.skip("the Python reference loop (solvers/sytrd.py) is real-only on this branch: complex "
                    "comes with solver-complex's branch")
    a = _hermitian(np.random.default_rng([seed, n]), n).astype(dtype)
    a64 = a.astype(np.complex128)
    coll = Collectives(grid, kind, cupy)
    (dp, ep, tp), vp, loop = _reduce(a, grid, coll, nb, native=False)
    assert loop.startswith("python"), loop
    eps = float(np.finfo(dtype).eps)
    scale = np.abs(a64).sum(axis=0).max()
    tol = 100 * n * eps
    products = ["hemv_lower", "gemv"] if COMM.Get_size() == 1 else ["gemv"]
    for product in products:
        what = f"seed={seed} {product}"
        (d, e, t), v, loop = _reduce(a, grid, coll, nb, native=True, product=product)
        assert loop.startswith(f"native, {product}"), loop
        if COMM.Get_size() > 1 and kind == "hpcolls":
            assert "hpcolls native (C entry)" in loop, loop
        assert d.dtype == e.dtype == np.finfo(dtype).dtype and t.dtype == dtype, (d.dtype, e.dtype, t.dtype)
        assert np.abs(d - dp).max(initial=0) <= tol * scale, what + ": d"
        assert np.abs(e - ep).max(initial=0) <= tol * scale, what + ": e"
        assert np.abs(t - tp).max(initial=0) <= tol, what + ": tau"
        assert np.abs(v - vp).max(initial=0) <= tol, what + ": reflectors"
        q = _q_from_reflectors(v.astype(np.complex128), t.astype(np.complex128))
        tri = np.diag(d.astype(np.float64)) + np.diag(e.astype(np.float64), 1) + np.diag(e.astype(np.float64), -1)
        assert np.abs(q.conj().T @ a64 @ q - tri).sum(axis=0).max() <= 20 * n * eps * scale, what + ": QᴴAQ != T"
        assert np.abs(q.conj().T @ q - np.eye(n)).sum(axis=0).max() <= 20 * n * eps, what + ": Q not unitary"
        digest = d.tobytes() + e.tobytes() + t.tobytes()
        assert len(set(COMM.allgather(digest))) == 1, what + ": ranks computed different d, e, tau"
        (d2, e2, t2), v2, _ = _reduce(a, grid, coll, nb, native=True, product=product)
        assert d2.tobytes() + e2.tobytes() + t2.tobytes() == digest and v2.tobytes() == v.tobytes(), \
            what + ": a rerun gave other bits"


def test_native_loop_refuses_complex_d_and_e(grid):
    """d and e of a complex reduction are real (zhetrd's D, E): complex ones are refused, by name."""
    from solvers.sytrd_native import NativeColumnLoop
    n, nb = 8, 4
    c = DistMatrix.from_global(cupy.asarray(_hermitian(np.random.default_rng(), n)), grid, nb)
    coll = Collectives(grid, "mpi", cupy)
    loop, why = NativeColumnLoop.create(c, coll)
    assert loop is not None, why
    v = cupy.zeros((n, nb), dtype=c.dtype)
    with pytest.raises(TypeError, match="d must be a C-contiguous float64 array for a complex128 matrix"):
        loop.run(v[:, 0].copy(), v, v.copy(), cupy.zeros(n, c.dtype), cupy.zeros(n - 1), cupy.zeros(n, c.dtype),
                 0, nb)
