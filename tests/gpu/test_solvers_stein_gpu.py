"""Multisection and inverse iteration on the GPU (native/solvers/stein_device.cu): the device's
eigenvalues and iterates bit for bit the host build's (tests/cpu/test_solvers_stein.py checks
those against LAPACK), the orthonormalized vectors passing their checks on the spectra that
stress eigensolvers, and a subset of a uniform spectrum of order 4096 (one group of 410 vectors,
a thread each). Skips where cupy or a GPU is missing."""
import numpy as np
import pytest
import scipy.linalg

from solver_gpu import COMM, cupy

from solvers import stein  # noqa: E402
from solvers.backend import Collectives  # noqa: E402
from solvers.distributed import ProcessGrid  # noqa: E402
from solvers.stebz import stebz  # noqa: E402
from solvers.kernels import kernels  # noqa: E402
from solver_testing import hard_tridiagonals, shared_seed, straddled_tridiagonal  # noqa: E402

from mpi4py import MPI  # noqa: E402

NATIVE = kernels()[0]


@pytest.fixture
def rng():
    return np.random.default_rng(shared_seed(COMM))


def _cases(rng):
    return hard_tridiagonals(rng, 300) + [("straddled", *straddled_tridiagonal(rng, 40))]


def test_device_eigenvalues_are_the_hosts_bit_for_bit(rng):
    for name, d, e in _cases(rng):
        n = d.shape[0]
        for il, iu in ((1, max(1, n // 10)), (n // 3, 2 * n // 3), (1, n)):
            host = stein.multisection(np)(d, e, il, iu)
            device = stein.multisection(cupy)(d, e, il, iu)
            assert device.tobytes() == host.tobytes(), f"{name} {il}..{iu}: {np.abs(device - host).max():.2e}"


def test_device_iterates_are_the_hosts_bit_for_bit(rng):
    """The inverse iteration's vectors before orthonormalization, and its iteration counts."""
    for name, d, e in _cases(rng):
        n = d.shape[0]
        w = stein.multisection(np)(d, e, 1, n // 4)
        onenrm = stein.norm1(d, e)
        y_host, its_host = stein._inverse_iteration(NATIVE, d, e, w, 7, onenrm, np)
        y_dev, its_dev = stein._inverse_iteration(NATIVE, d, e, w, 7, onenrm, cupy)
        assert cupy.asnumpy(its_dev).tolist() == its_host.tolist(), name
        assert cupy.asnumpy(y_dev).tobytes() == y_host.tobytes(), name


def test_device_vectors_pass_their_checks(rng):
    """Orthonormal and accurate by LAPACK's ratios, or handed over with a reason (never for a
    random spectrum); the vectors of well separated eigenvalues the host's to rounding."""
    grid = ProcessGrid(MPI.COMM_SELF)
    try:
        host, device = Collectives(grid, "mpi", np), Collectives(grid, "mpi", cupy)
        for name, d, e in _cases(rng):
            n = d.shape[0]
            il, iu = 1, max(1, n // 5)
            w = stebz(d, e, il, iu, device, stein.bisector(cupy))
            got, why = stein.vectors(d, e, il, w, device)
            ref, why_host = stein.vectors(d, e, il, w, host)
            assert (why is None) == (why_host is None), (name, why, why_host)
            if why is not None:
                assert not name.startswith("random"), (name, why)
                continue
            # Inside a cluster any orthonormal basis is right, and cuBLAS's rounding in CholQR
            # picks another than numpy's: compare the vectors of well separated eigenvalues.
            spectrum = scipy.linalg.eigvalsh_tridiagonal(d, e)
            gaps = np.minimum(np.diff(spectrum, prepend=-np.inf), np.diff(spectrum, append=np.inf))[il - 1:iu]
            apart = gaps >= 1e-6 * stein.norm1(d, e)
            # The sign rule (largest entry positive, as dstein) is a tie for symmetric or
            # antisymmetric vectors (Toeplitz T: |z_j| = |z_(n+1-j)|), which rounding breaks
            # either way: compare each vector up to its sign.
            z = cupy.asnumpy(got.mine)
            z *= np.where(np.sum(z * ref.mine, axis=0) < 0, -1.0, 1.0)[None, :]
            assert np.abs(z - ref.mine)[:, apart].max(initial=0.0) < 1e-8, name
    finally:
        grid.free()


def test_tight_clusters_on_the_device():
    """The straddled tridiagonals of tests/cpu/test_solvers_stein.py's tight-cluster test: their
    clusters' vectors come from the host's dstein into the device's Z, and pass dstt21's ratios."""
    from solver_testing import tridiagonal_ratios
    grid = ProcessGrid(MPI.COMM_SELF)
    try:
        coll = Collectives(grid, "mpi", cupy)
        for seed in (136, 366):
            d, e = straddled_tridiagonal(np.random.default_rng(seed), 20)
            w = stebz(d, e, 1, 80, coll, stein.bisector(cupy))
            assert any(b - a >= 3 for a, b in stein.tight_clusters(w, stein.norm1(d, e))), seed
            columns, why = stein.vectors(d, e, 1, w, coll)
            assert why is None, (seed, why)
            assert max(tridiagonal_ratios(d, e, w, cupy.asnumpy(columns.mine))) < stein.THRESHOLD, seed
    finally:
        grid.free()


def test_a_tenth_of_a_uniform_spectrum_of_order_4096():
    """The bench's spectrum (solvers.bench.tridiagonal): one group (no gap of 10⁻³ ‖T‖₁), every
    check passed, eigenvalues within an ulp of ‖T‖ of the host's dstebz on a sample."""
    from solvers.bench.tridiagonal import spectrum_tridiagonal
    from solvers.stebz import lapack_bisect
    n, k = 4096, 410
    d, e = spectrum_tridiagonal(n, 1234)
    grid = ProcessGrid(MPI.COMM_SELF)
    try:
        coll = Collectives(grid, "mpi", cupy)
        w = stebz(d, e, 1, k, coll, stein.bisector(cupy))
        for i in (1, k // 2, k):
            assert abs(w[i - 1] - lapack_bisect(d, e, i, i)[0]) <= 4 * stein.bisection_inputs(d, e)[1][3]
        columns, why = stein.vectors(d, e, 1, w, coll)
        assert why is None, why
        assert columns.mine.shape == (n, k)
    finally:
        grid.free()
