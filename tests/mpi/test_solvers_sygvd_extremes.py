"""Matrices at the edges, against scipy.linalg.eigh of the same matrix: far from 1 in magnitude
(solvers/scaling.py: s·A for s near the ends of the dtype's range, which LAPACK scales, and a
matrix inside the range left alone), and degenerate ones (zero, orders 1 and 2, the identity,
eigenvalues repeated, rank one, subnormal entries); by both reductions, every subset solver,
jobz V and N."""
import itertools

import numpy as np
import pytest
import scipy.linalg
from mpi4py import MPI

from solvers.backend import Collectives
from solvers.distributed import DistMatrix, ProcessGrid
from solvers.lapack_names import lapack_name
from solvers.scaling import limits, scale_factor
from solvers.subset import EigenRange
from solvers.sygvd import sygvd
from solvers.cli.check import THRESHOLD, eigen_ratios
from solvers.problems import random_symmetric
from solver_testing import share_node_cores

share_node_cores(MPI.COMM_WORLD)
# Scales beyond dsyevx's [RMIN, RMAX] on both sides, where the unscaled solve loses the answer
# (float64: eigenvalues 60 % off at 1e-170, NaN at 1e160).
SCALES = {np.float32: (1e-25, 1e15), np.float64: (1e-170, 1e160),
          np.complex64: (1e-25, 1e15), np.complex128: (1e-170, 1e160)}


def test_scale_factor_is_a_power_of_two_into_the_range():
    for dtype in (np.float32, np.float64):
        rmin, rmax = limits(dtype)
        assert all(scale_factor(x, dtype) == 1.0 for x in (1.0, 0.0, np.nan, np.inf))
        for largest in (rmin / 3e5, rmin / 2, rmax * 2, rmax * 7e4):
            sigma = scale_factor(largest, dtype)
            assert np.frexp(sigma)[0] == 0.5, sigma                      # a power of two
            assert rmin <= largest * sigma <= rmax, (largest, sigma)
            nearer = sigma / 2 if largest < rmin else sigma * 2          # one power of two less far
            assert not rmin <= largest * nearer <= rmax, (largest, sigma)


@pytest.mark.parametrize("reduction", ["1stage", "2stage"])
@pytest.mark.parametrize("dtype", list(SCALES), ids=["f32", "f64", "c64", "c128"])
def test_far_scaled_matrices_solve_as_scipys(comm, seed, dtype, reduction):
    rng = np.random.default_rng(seed)
    n, nb = 26, 4
    base = random_symmetric(rng, n, np.dtype(dtype).kind == "c")
    eps = float(np.finfo(dtype).eps)
    grid = ProcessGrid(comm)
    try:
        for s in SCALES[dtype]:
            a = (s * base).astype(dtype)
            w_ref = scipy.linalg.eigvalsh(a)
            mid = (w_ref[1:] + w_ref[:-1]) / 2
            ranges = [(EigenRange.all(), slice(None)), (EigenRange.by_index(3, 11, "invit"), slice(2, 11)),
                      (EigenRange.by_index(5, 8, "mrrr"), slice(4, 8)),
                      (EigenRange.by_value(mid[1], mid[9], "dc"), slice(2, 10))]
            for subset, picked in ranges:
                for jobz in ("V", "N"):
                    coll = Collectives(grid)
                    w, z = sygvd(DistMatrix.from_global(a, grid, nb), None, coll, jobz=jobz, method="distributed",
                                 subset=subset, reduction=reduction, band=nb // 2)
                    what = f"seed={seed} s={s:g} {subset} jobz={jobz}"
                    notes = coll.stats[lapack_name({"1stage": "sytrd", "2stage": "sy2sb"}[reduction], dtype)].notes
                    assert notes.get("scaled", "").startswith("by 2^"), (what, notes)
                    w = np.asarray(w)
                    assert w.dtype == w_ref.dtype and np.all(np.isfinite(w)), what
                    np.testing.assert_allclose(w, w_ref[picked], rtol=0, atol=50 * n * eps * np.abs(w_ref).max(),
                                               err_msg=what)
                    if jobz == "V":
                        zg = z.to_global(coll).astype(np.complex128 if np.iscomplexobj(a) else np.float64)
                        ratios = eigen_ratios(a.astype(zg.dtype), np.eye(n, dtype=zg.dtype), w.astype(np.float64),
                                              zg, 1, eps)
                        assert all(v < THRESHOLD for v in ratios.values()), (what, ratios)
    finally:
        grid.free()


def test_a_matrix_inside_the_range_is_not_scaled(comm, seed):
    rng = np.random.default_rng(seed)
    grid = ProcessGrid(comm)
    try:
        coll = Collectives(grid)
        a = 1e70 * random_symmetric(rng, 12, False)
        sygvd(DistMatrix.from_global(a, grid, 4), None, coll, method="distributed", reduction="1stage")
        assert "scaled" not in coll.stats["sytrd"].notes
    finally:
        grid.free()


DEGENERATE = {"zero": np.zeros((20, 20)), "order 1": np.array([[3.0]]), "order 2": np.array([[1.0, 2.0], [2.0, 1.0]]),
              "identity": np.eye(20), "repeated": np.diag(np.repeat([1.0, 2.0, 3.0, 4.0], 5)),
              "rank one": np.outer(np.arange(20.0), np.arange(20.0)), "subnormal": 1e-310 * np.eye(6)}


@pytest.mark.parametrize("reduction", ["1stage", "2stage"])
def test_degenerate_matrices_solve_as_scipys(comm, reduction):
    """Before the tight clusters went through dstebz's splitting, invit's dstein did not converge
    on the subnormal identity (scaled up: T - λI exactly zero at ‖T‖ ≈ 10⁻¹⁴⁶)."""
    grid = ProcessGrid(comm)
    try:
        for (name, a), solver, jobz in itertools.product(DEGENERATE.items(), ["invit", "mrrr", "dc"], "VN"):
            n = a.shape[0]
            ref = scipy.linalg.eigvalsh(a)
            top = max(1.0, np.abs(ref).max())
            for subset, picked in [(EigenRange.all(), slice(None)),
                                   (EigenRange.by_index(1, max(1, n // 2), solver), slice(0, max(1, n // 2)))]:
                coll = Collectives(grid)
                w, z = sygvd(DistMatrix.from_global(a, grid, 4), None, coll, jobz=jobz, method="distributed",
                             subset=subset, reduction=reduction, band=2)
                what = f"{name} {subset} jobz={jobz}"
                np.testing.assert_allclose(np.asarray(w), ref[picked], rtol=0, atol=1e-13 * top, err_msg=what)
                if jobz == "V":
                    zg = z.to_global(coll)
                    np.testing.assert_allclose(a @ zg, zg * np.asarray(w), rtol=0, atol=1e-13 * top, err_msg=what)
                    np.testing.assert_allclose(zg.T @ zg, np.eye(zg.shape[1]), rtol=0, atol=1e-13, err_msg=what)
    finally:
        grid.free()
