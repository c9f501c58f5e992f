"""solvers.eigh against scipy.linalg.eigh on one process: semantics, dtypes (real and complex),
both methods (one LAPACK call, the distributed stages), errors."""
import numpy as np
import pytest
import scipy.linalg

import solvers
from solvers.problems import random_symmetric, spd_with_condition
from solver_testing import not_positive_definite, poison_unreferenced, shared_seed, with_junk


@pytest.fixture
def seed():
    return shared_seed()


def _pencil(seed, n, dtype=np.float64):
    rng = np.random.default_rng(seed)
    hermitian = np.dtype(dtype).kind == "c"
    return (random_symmetric(rng, n, hermitian).astype(dtype),
            spd_with_condition(rng, n, 50.0, hermitian).astype(dtype))


@pytest.mark.parametrize("method", ["auto", "distributed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("itype", [1, 2, 3])
@pytest.mark.parametrize("lower", [True, False])
def test_every_dtype_matches_scipy(seed, dtype, itype, lower, method):
    """Eigenvalues in scipy's dtype (real: float32 for float32/complex64), eigenvectors in the
    input's, values as scipy's; junk in the other triangle and in the imaginary parts of the
    diagonals is not read."""
    a, b = _pencil(seed, 23, dtype)
    w_ref, z_ref = scipy.linalg.eigh(a, b, type=itype, lower=lower)
    rng = np.random.default_rng(seed + 1)
    w, z = solvers.eigh(with_junk(rng, a, lower), with_junk(rng, b, lower), lower=lower, type=itype,
                        nb=5, method=method)
    assert w.dtype == w_ref.dtype and z.dtype == z_ref.dtype, (w.dtype, z.dtype)
    tol = 1e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10
    np.testing.assert_allclose(w, w_ref, rtol=tol, atol=tol, err_msg=f"seed={seed}")
    # Eigenvectors agree up to a unit factor per column (the spectrum is simple with probability one).
    phase = np.sum(z_ref.conj() * z, axis=0)
    np.testing.assert_allclose(z / (phase / np.abs(phase)), z_ref, atol=100 * tol, err_msg=f"seed={seed}")
    assert solvers.eigh(a, b, type=itype, eigvals_only=True, method=method).dtype == w_ref.dtype


@pytest.mark.parametrize("itype", [1, 2, 3])
@pytest.mark.parametrize("lower", [True, False])
def test_matches_scipy_and_reads_one_triangle(seed, itype, lower):
    a, b = _pencil(seed, 29)
    w_ref, z_ref = scipy.linalg.eigh(a, b, type=itype, lower=lower)
    w, z = solvers.eigh(poison_unreferenced(a, lower), poison_unreferenced(b, lower),
                        lower=lower, type=itype, nb=6)
    assert type(w) is np.ndarray and w.dtype == np.float64 and z.shape == (29, 29)
    np.testing.assert_allclose(w, w_ref, rtol=1e-10, atol=1e-12, err_msg=f"seed={seed}")
    # Eigenvectors agree up to sign (the spectrum is simple with probability one).
    signs = np.sign(np.sum(z * z_ref, axis=0))
    np.testing.assert_allclose(z * signs, z_ref, atol=1e-8, err_msg=f"seed={seed}")


def test_eigvals_only_and_standard_problem(seed):
    a, _ = _pencil(seed, 17)
    w = solvers.eigh(a, eigvals_only=True, nb=4)
    np.testing.assert_allclose(w, scipy.linalg.eigvalsh(a), rtol=1e-12, atol=1e-13, err_msg=f"seed={seed}")
    w, z = solvers.eigh(a, nb=64)                          # nb > n
    np.testing.assert_allclose(z.T @ z, np.eye(17), atol=1e-13, err_msg=f"seed={seed}")
    np.testing.assert_allclose(a @ z, z * w, atol=1e-12, err_msg=f"seed={seed}")


def test_mixed_dtypes_as_scipy(seed):
    """Real with complex solves in complex; single precision stays single (complex64)."""
    a, b = _pencil(seed, 9, np.complex64)
    for x, y in ((a, b.real.astype(np.float64)), (a.real.astype(np.float32), b), (a, b)):
        w, z = solvers.eigh(x, y)
        w_ref, z_ref = scipy.linalg.eigh(x, y)
        assert (w.dtype, z.dtype) == (w_ref.dtype, z_ref.dtype), (x.dtype, y.dtype)


def test_float32_stays_float32_and_ints_become_float64(seed):
    a, b = _pencil(seed, 20, np.float32)
    w, z = solvers.eigh(a, b)
    assert w.dtype == np.float32 and z.dtype == np.float32
    np.testing.assert_allclose(w, scipy.linalg.eigh(a, b, eigvals_only=True), rtol=2e-4, atol=2e-5,
                               err_msg=f"seed={seed}")
    ints = np.random.default_rng(seed).integers(-5, 5, (6, 6))
    w = solvers.eigh(ints + ints.T, eigvals_only=True)
    assert w.dtype == np.float64
    np.testing.assert_allclose(w, scipy.linalg.eigvalsh(ints + ints.T), atol=1e-12)


def test_narrow_types_are_solved_in_single_precision_as_scipy_does(seed):
    """scipy takes LAPACK's single precision for every type narrower than 32 bits (bool, int8,
    uint8, int16, uint16, float16), double for wider integers, whatever the mix of a and b."""
    ints = np.random.default_rng(seed).integers(0, 2, (7, 7))
    a, spd = ints + ints.T, 2 * np.eye(7, dtype=np.int8) + 1
    for x in (a.astype(bool), a.astype(np.int8), a.astype(np.uint8), a.astype(np.int16), a.astype(np.uint16),
              a.astype(np.float16), a.astype(np.int32), a.astype(np.uint64)):
        for y in (None, spd, spd.astype(np.float64), spd.astype(np.complex64)):
            w, z = solvers.eigh(x, y)
            w_ref, z_ref = scipy.linalg.eigh(x, y)
            assert (w.dtype, z.dtype) == (w_ref.dtype, z_ref.dtype), (x.dtype, None if y is None else y.dtype)


def test_inputs_are_not_modified(seed):
    a, b = _pencil(seed, 12)
    a0, b0 = a.copy(), b.copy()
    solvers.eigh(a, b, overwrite_a=True, overwrite_b=True)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)


def test_empty_matrix():
    w, z = solvers.eigh(np.zeros((0, 0)))
    assert w.shape == (0,) and z.shape == (0, 0)


@pytest.mark.parametrize("method", ["auto", "distributed"])
@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("minor", [1, 5, 13])
def test_not_positive_definite_raises_linalgerror_with_info(seed, minor, hermitian, method):
    rng = np.random.default_rng(seed)
    b = not_positive_definite(rng, 13, minor, hermitian)
    with pytest.raises(np.linalg.LinAlgError, match=f"leading minor of order {minor} ") as err:
        solvers.eigh(random_symmetric(rng, 13, hermitian), b, nb=4, method=method)
    assert err.value.info == minor, f"seed={seed}"
    # scipy agrees that B is not positive definite
    with pytest.raises(np.linalg.LinAlgError):
        scipy.linalg.eigh(random_symmetric(rng, 13), b)


def test_bad_arguments_raise_valueerror(seed):
    a, b = _pencil(seed, 5)
    with pytest.raises(ValueError, match="square"):
        solvers.eigh(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="square"):
        solvers.eigh(np.zeros(3))
    with pytest.raises(ValueError, match="b dimensions"):
        solvers.eigh(a, np.eye(4))
    with pytest.raises(ValueError, match="type"):
        solvers.eigh(a, b, type=4)
    with pytest.raises(ValueError, match="grid"):
        solvers.eigh(a, b, grid=(2, 2))
    with pytest.raises(ValueError, match="method"):
        solvers.eigh(a, b, method="fast")
    with pytest.raises(ValueError, match="unsupported dtype"):
        solvers.eigh(a.astype(str))


@pytest.mark.parametrize("method", ["auto", "single", "distributed", "replicated"])
@pytest.mark.parametrize("nb", [0, -3, 2.5, True])
def test_block_size_must_be_a_positive_integer_for_every_method(seed, method, nb):
    """As the command line's --nb: nb=0 was taken as 'the default', -3 refused by one method."""
    a, b = _pencil(seed, 5)
    with pytest.raises(ValueError, match=r"nb \(the block size\) must be a positive integer"):
        solvers.eigh(a, b, nb=nb, method=method)
    with pytest.raises(ValueError, match=r"nb \(the block size\) must be a positive integer"):
        solvers.cholesky(b, nb=nb)


@pytest.mark.parametrize("comm", ["hello", 3, object()])
def test_comm_must_be_an_mpi4py_communicator(seed, comm):
    a, b = _pencil(seed, 5)
    with pytest.raises(TypeError, match="comm must be an mpi4py intracommunicator"):
        solvers.eigh(a, b, comm=comm)
    with pytest.raises(TypeError, match="comm must be an mpi4py intracommunicator"):
        solvers.cholesky(b, comm=comm)


@pytest.mark.parametrize("method", ["auto", "distributed"])
@pytest.mark.parametrize("lower", [True, False])
def test_non_finite_in_referenced_triangle_is_valueerror(seed, lower, method):
    a, b = _pencil(seed, 8)
    i, j = (6, 2) if lower else (2, 6)
    bad = a.copy()
    bad[i, j] = np.nan
    with pytest.raises(ValueError, match="A has NaN or Inf"):
        solvers.eigh(bad, b, lower=lower, method=method)
    bad = b.copy()
    bad[i, j] = np.inf
    with pytest.raises(ValueError, match="B has NaN or Inf"):
        solvers.eigh(a, bad, lower=lower, method=method)
    # The other triangle may hold anything.
    np.testing.assert_allclose(solvers.eigh(poison_unreferenced(a, lower), lower=lower, eigvals_only=True, method=method),
                               scipy.linalg.eigvalsh(a), atol=1e-12, err_msg=f"seed={seed}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("lower", [True, False])
def test_one_rank_is_scipys_lapack_call_bit_for_bit(seed, dtype, lower):
    """At one rank eigh is one LAPACK call made as scipy makes it (drivers gvd / evd): the same
    bits, junk where LAPACK reads nothing included."""
    a, b = _pencil(seed, 37, dtype)
    rng = np.random.default_rng(seed + 2)
    a, b = with_junk(rng, a, lower), with_junk(rng, b, lower)
    for itype in (1, 2, 3):
        got = solvers.eigh(a, b, lower=lower, type=itype)
        ref = scipy.linalg.eigh(a, b, lower=lower, type=itype, driver="gvd", check_finite=False)
        assert all(np.array_equal(x, y) for x, y in zip(got, ref)), f"seed={seed} itype={itype}"
    for only in (False, True):
        got = solvers.eigh(a, lower=lower, eigvals_only=only)
        ref = scipy.linalg.eigh(a, lower=lower, eigvals_only=only, driver="evd", check_finite=False)
        assert np.array_equal(got[0] if not only else got, ref[0] if not only else ref), f"seed={seed}"
