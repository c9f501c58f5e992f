"""solvers.eigh with scipy.linalg.eigh's whole signature on one process: subsets by index and
by value (empty and all-inclusive too), drivers by scipy's names and rules, errors as scipy's,
and a solvers.cholesky factor reused for several A — each against scipy with the same
arguments, for every dtype and both the one-call and the distributed methods."""
import numpy as np
import pytest
import scipy.linalg

import solvers
from solvers.problems import random_symmetric, spd_with_condition
from solver_testing import shared_seed, with_junk


@pytest.fixture
def seed():
    return shared_seed()


def _pencil(rng, n, dtype):
    hermitian = np.dtype(dtype).kind == "c"
    return (random_symmetric(rng, n, hermitian).astype(dtype),
            spd_with_condition(rng, n, 50.0, hermitian).astype(dtype))


def _subsets(w, rng):
    """scipy keyword sets: index, one pair, value, empty value range, all-inclusive."""
    n = w.shape[0]
    mid = (w[1:] + w[:-1]) / 2
    lo = int(rng.integers(0, n // 2))
    j = int(rng.integers(0, n - 1))
    return [{"subset_by_index": [lo, int(rng.integers(lo, n))]},
            {"subset_by_index": [j, j]},
            {"subset_by_value": [mid[lo], mid[-1]]},
            {"subset_by_value": [w[j] + (w[j + 1] - w[j]) / 3, w[j] + 2 * (w[j + 1] - w[j]) / 3]},
            {"subset_by_value": [-np.inf, np.inf]}]


def _agree(got, ref, dtype, seed, what):
    w, z = got
    w_ref, z_ref = ref
    assert (w.shape, w.dtype, z.shape, z.dtype) == (w_ref.shape, w_ref.dtype, z_ref.shape, z_ref.dtype), what
    tol = 1e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10
    np.testing.assert_allclose(w, w_ref, rtol=tol, atol=tol, err_msg=f"seed={seed} {what}")
    if z.shape[1]:
        phase = np.sum(z_ref.conj() * z, axis=0)
        np.testing.assert_allclose(z / (phase / np.abs(phase)), z_ref, atol=100 * tol,
                                   err_msg=f"seed={seed} {what}")


@pytest.mark.parametrize("method", ["auto", "distributed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("generalized", [True, False])
def test_subsets_match_scipy(seed, dtype, method, generalized):
    rng = np.random.default_rng(seed)
    n = 21
    a, b = _pencil(rng, n, dtype)
    b = b if generalized else None
    lower = bool(rng.integers(2))
    itype = int(rng.integers(1, 4))
    w_all = scipy.linalg.eigh(a, b, type=itype, eigvals_only=True)
    for keywords in _subsets(w_all, rng):
        ref = scipy.linalg.eigh(a, b, lower=lower, type=itype, **keywords)
        got = solvers.eigh(with_junk(rng, a, lower), None if b is None else with_junk(rng, b, lower),
                           lower=lower, type=itype, nb=4, method=method, **keywords)
        _agree(got, ref, dtype, seed, f"{method} {keywords} itype={itype} lower={lower}")
        w = solvers.eigh(a, b, lower=lower, type=itype, eigvals_only=True, nb=4, method=method,
                         **keywords)
        assert w.shape == ref[0].shape and w.dtype == ref[0].dtype


@pytest.mark.parametrize("driver", ["ev", "evd", "evr", "evx", "gv", "gvd", "gvx"])
def test_scipy_drivers_are_taken(seed, driver):
    rng = np.random.default_rng(seed)
    a, b = _pencil(rng, 17, np.float64)
    b = b if driver.startswith("g") else None
    for method in ("auto", "distributed"):
        ref = scipy.linalg.eigh(a, b, driver=driver)
        _agree(solvers.eigh(a, b, driver=driver, nb=5, method=method), ref, np.float64, seed,
               f"{driver} {method}")
        if driver in ("evr", "evx", "gvx"):
            ref = scipy.linalg.eigh(a, b, driver=driver, subset_by_index=[2, 6])
            _agree(solvers.eigh(a, b, driver=driver, subset_by_index=[2, 6], nb=5, method=method),
                   ref, np.float64, seed, f"{driver} subset {method}")


@pytest.mark.parametrize("bad", [
    {"driver": "xyz"}, {"driver": "gvd", "b": None}, {"driver": "evd"},
    {"driver": "gvd", "subset_by_index": [0, 2]}, {"subset_by_index": [3, 1]},
    {"subset_by_index": [0, 17]}, {"subset_by_index": [-1, 2]}, {"subset_by_value": [2.0, 1.0]},
    {"subset_by_value": [2, 1]},
    {"subset_by_index": [0, 1], "subset_by_value": [0.0, 1.0]}])
def test_bad_subsets_and_drivers_raise_as_scipy(seed, bad):
    rng = np.random.default_rng(seed)
    a, b = _pencil(rng, 17, np.float64)
    keywords = dict(bad)
    b = keywords.pop("b", b)
    with pytest.raises(ValueError) as ours:
        solvers.eigh(a, b, **keywords)
    with pytest.raises(ValueError) as theirs:
        scipy.linalg.eigh(a, b, **keywords)
    assert str(ours.value) == str(theirs.value), (ours.value, theirs.value)


def test_empty_matrix_as_scipy():
    w, z = solvers.eigh(np.zeros((0, 0)), subset_by_index=[0, 3])
    assert w.shape == (0,) and z.shape == (0, 0)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64], ids=["f64", "c64"])
def test_factor_reused_for_several_a(seed, dtype):
    """f = solvers.cholesky(b) once; eigh(a_k, f) for several a_k (both triangles, a subset and
    all pairs) agrees with scipy on (a_k, b)."""
    rng = np.random.default_rng(seed)
    n = 24
    _, b = _pencil(rng, n, dtype)
    with solvers.cholesky(with_junk(rng, b, True), nb=5) as f:
        np.testing.assert_allclose(f.to_global(), np.linalg.cholesky(b), atol=1e-4 if dtype == np.complex64 else 1e-12)
        for lower in (True, False, True):
            a, _ = _pencil(rng, n, dtype)
            for keywords in ({"subset_by_index": [0, 5]}, {}):
                ref = scipy.linalg.eigh(a, b, lower=lower, **keywords)
                _agree(solvers.eigh(with_junk(rng, a, lower), f, lower=lower, **keywords), ref,
                       dtype, seed, f"factor lower={lower} {keywords}")
        with pytest.raises(ValueError, match="block size"):
            solvers.eigh(a, f, nb=7)
        with pytest.raises(ValueError, match="precision"):
            solvers.eigh(a.astype(np.complex128 if dtype == np.complex64 else np.float32), f)
        with pytest.raises(ValueError, match="distributed"):
            solvers.eigh(a, f, method="single")
    with pytest.raises(ValueError, match="freed"):
        solvers.eigh(a, f)


def test_cholesky_refuses_what_potrf_refuses(seed):
    rng = np.random.default_rng(seed)
    from solver_testing import not_positive_definite
    with pytest.raises(np.linalg.LinAlgError) as info:
        solvers.cholesky(not_positive_definite(rng, 12, 5))
    assert info.value.info == 5
    b = spd_with_condition(rng, 12, 10.0)
    b[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        solvers.cholesky(b)
    solvers.cholesky(b, lower=False).free()    # the NaN is in the other triangle
