"""sytrd / hetrd's host column loop (sytrd_host.py: BLAS calls on one rank holding all of C)
against the Python reference loop (``sytrd(..., native=False)``): Qᴴ A Q = T and Q unitary (the
bounds of the GPU loop's test, tests/gpu/test_solvers_hetrd_gpu.py), the reference's eigenvalues
of T and its identity reflectors (tau = 0), and in double precision the reference's d, e, tau and
reflectors of the first LEADING columns within rounding. Past them the two loops agree only
through those invariants: each column's d, e and reflector depend on every earlier column's
rounding, amplified from column to column (T is determined by Q's first column, and not
well-conditioned in it), so two backward-stable loops drift apart elementwise: in single
precision over a hundred columns, in double precision now and then past 100 n eps (seed 203720:
1.4 times it at column 49 of a 96 × 96 with two reduced columns, 4.3 times at column 28 of a
random 33 × 33), while over the first 32 columns of 300 such matrices the worst was 0.5 % of it.
Every dtype, block sizes that cut the matrix unevenly, and the
columns whose reflector is the identity (tau = 0: a column already reduced, real or with a
complex x₀ that must still be reflected); larfg_scalars against LAPACK's larfg; ormtr's host
groups of panels against one panel at a time."""
import numpy as np
import pytest
import scipy.linalg
import scipy.linalg.lapack
from mpi4py import MPI

from solvers.backend import Collectives
from solvers.distributed import DistMatrix, ProcessGrid
from solvers.householder import larfg_scalars
from solvers.sytrd import sytrd
from solvers.sytrd_host import host_blas_product

LEADING = 16  # columns compared elementwise (the docstring says why not all)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
DTYPE_IDS = ["f32", "f64", "c64", "c128"]


@pytest.fixture(scope="module")
def grid():
    grid = ProcessGrid(MPI.COMM_WORLD.Split(MPI.COMM_WORLD.Get_rank()))
    yield grid
    grid.free()


def _hermitian(rng, n, dtype, structure):
    x = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((n, n))
    a = (x + x.conj().T) / 2
    if structure == "reduced_columns":   # columns 3 and 7 already reduced (x[1:] = 0)
        for j in (3, 7)[:max(n - 3, 0) // 4]:
            a[j + 2:, j] = 0
            a[j, j + 2:] = 0
    elif structure == "tridiagonal":   # every x[1:] = 0: real x₀ gives H = I, complex x₀ a reflector
        a = np.triu(np.tril(a, 1), -1)
    return a.astype(dtype)


def _reduce(a, grid, nb, native):
    coll = Collectives(grid)
    c = DistMatrix.from_global(a, grid, nb)
    d, e, tau = sytrd(c, coll, native=native)
    return d, e, tau, np.tril(c.local, -1), coll.stats["other"].notes["column_loop"]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n,nb", [(1, 4), (2, 1), (13, 4), (40, 7), (33, 64), (96, 32)])
@pytest.mark.parametrize("structure", ["random", "reduced_columns", "tridiagonal"])
def test_host_loop_is_the_reference(grid, rng, n, nb, dtype, structure):
    a = _hermitian(rng, n, dtype, structure)
    host = _reduce(a, grid, nb, native=True)
    reference = _reduce(a, grid, nb, native=False)
    assert host[4].startswith("host BLAS") and reference[4] == "python (requested)"
    eps = float(np.finfo(dtype).eps)
    a64 = a.astype(np.complex128)
    scale = max(np.abs(a64).sum(axis=0).max(), 1.0)
    tol = 100 * n * eps
    first = min(n, LEADING)
    for got, expect, what in zip(host[:4], reference[:4], ("d", "e", "tau", "reflectors")):
        assert got.dtype == expect.dtype, what
        if eps < 1e-10:
            assert np.abs(got[..., :first] - expect[..., :first]).max(initial=0) <= tol * scale, what
    assert np.array_equal(host[2] == 0, reference[2] == 0), "identity reflectors"
    eigenvalues = [scipy.linalg.eigvalsh_tridiagonal(x[0].astype(np.float64), x[1].astype(np.float64))
                   if n > 1 else x[0] for x in (host, reference)]
    assert np.abs(eigenvalues[0] - eigenvalues[1]).max() <= tol * scale, "eigenvalues of T"
    d, e, tau, v = (x.astype(np.complex128) for x in host[:4])
    q = np.eye(n, dtype=np.complex128)
    for j in range(n - 1):   # Q = H₀ H₁ ⋯, H_j = I - tau_j v_j v_jᴴ, v_j in column j below the diagonal
        q[:, j + 1:] -= tau[j] * np.outer(q[:, j + 1:] @ v[j + 1:, j], v[j + 1:, j].conj())
    tri = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    assert np.abs(q.conj().T @ a64 @ q - tri).sum(axis=0).max() <= 20 * n * eps * scale, "QᴴAQ != T"
    assert np.abs(q.conj().T @ q - np.eye(n)).sum(axis=0).max() <= 20 * n * eps, "Q not unitary"


def test_host_loop_needs_the_whole_matrix_in_numpys_blas(grid):
    c = DistMatrix.from_global(np.eye(4), grid, 2)
    assert host_blas_product(c)
    c.local = np.asfortranarray(c.local)
    assert not host_blas_product(c)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", ["random", "tail_zero", "one"])
def test_larfg_scalars_is_lapacks(rng, dtype, case):
    """The same beta, tau and v[1:] as LAPACK's larfg."""
    complex_ = np.dtype(dtype).kind == "c"
    x = rng.standard_normal(7) + (1j * rng.standard_normal(7) if complex_ else 0)
    if case == "tail_zero":
        x[1:] = 0
    x = (x[:1] if case == "one" else x).astype(dtype)
    beta, tau, scale = larfg_scalars(x[0].item(), float(np.linalg.norm(x[1:])))
    lapack = scipy.linalg.lapack.get_lapack_funcs("larfg", (x,))
    alpha, tail, tau_ref = lapack(x.shape[0], x[0], x[1:].copy() if x.shape[0] > 1 else np.zeros(1, dtype), 1)
    rtol = 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-13
    assert isinstance(beta, float)
    np.testing.assert_allclose(beta, np.real(alpha), rtol=rtol)
    np.testing.assert_allclose(tau, tau_ref, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(x[1:] * scale, tail[:x.shape[0] - 1], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
@pytest.mark.parametrize("n,nb,offset", [(300, 8, 1), (300, 7, 1), (200, 16, 5), (129, 128, 1), (40, 4, 39)])
def test_ormtr_host_groups_are_one_panel_at_a_time(grid, rng, monkeypatch, n, nb, offset, dtype):
    """ormtr applies HOST_REFLECTORS reflectors at once on the host (several groups here, the
    last one short): the Q Z of one panel at a time, within rounding, for sytrd's reflectors
    (offset 1) and reflectors starting further down (sy2sb's: offset b)."""
    import solvers.ormtr as ormtr_module
    c = DistMatrix.from_global(np.tril(_hermitian(rng, n, dtype, "random"), -offset), grid, nb)
    for j in range(n - offset):   # unit leading entries, as sytrd / sy2sb store them
        c.local[j + offset, j] = 1
    tau = (2 / np.maximum((np.abs(c.local) ** 2).sum(axis=0), 1)).astype(dtype)   # unitary reflectors
    tau[n - offset:] = 0
    for j0 in range(0, n, nb):   # above each panel's reflectors: what sytrd leaves there (not read)
        c.local[:j0 + offset, j0:j0 + nb] = np.nan
    z = _hermitian(rng, n, dtype, "random")
    grouped = ormtr_module.ormtr(c, tau, DistMatrix.from_global(z, grid, nb), Collectives(grid), offset).local
    monkeypatch.setattr(ormtr_module, "HOST_REFLECTORS", nb)
    single = ormtr_module.ormtr(c, tau, DistMatrix.from_global(z, grid, nb), Collectives(grid), offset).local
    assert np.isfinite(single).all() and np.isfinite(grouped).all(), "read what is not a reflector"
    np.testing.assert_allclose(grouped, single, rtol=0, atol=1e-12 * np.abs(single).max())
