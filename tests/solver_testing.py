"""What the solver's test suites (tests/cpu, tests/mpi, tests/gpu) share, beside the public
generators of solvers.problems: fresh random seeds agreed by all ranks, junk and poison in what
the solver must not read (the other triangle; the imaginary parts of a Hermitian diagonal), grid
shapes, tridiagonals that stress divide and conquer, and the ratios and factorizations the checks
compare. Importable from every suite: pytest puts tests/ (where conftest.py is) on sys.path.
"""
import os

import numpy as np

from solvers.backend.threads import policy_for
from solvers.householder import larft
from solvers.kernels import kernels
from solvers.panel_qr import ORTHOGONALITY_LIMIT
from solvers.problems import gaussian, random_orthogonal, spd_with_condition
from solvers.phases import Phases
from solvers.stebz import share
from solvers.stedc import stedc_rows, torn_blocks
from solvers.stedc_merge import merge_finish, merge_prepare
from solvers.stedc_secular import loewner_z, row_norms, secular_roots


def shared_seed(comm=None):
    """A fresh random seed, the same on every rank of ``comm`` (drawn by rank 0). A failing
    test prints its seed; HPCOLLS_TEST_SEED=<that seed> replays it (every test then gets it)."""
    replay = os.environ.get("HPCOLLS_TEST_SEED")
    seed = int(replay) if replay else int(np.random.SeedSequence().entropy % 2**32)
    return comm.bcast(seed, root=0) if comm is not None else seed


def with_junk(rng, x, lower):
    """Copy of x whose strictly upper (lower=True) or strictly lower triangle holds random junk
    and, for complex x, whose diagonal has random imaginary parts: what LAPACK's s/d/c/z
    drivers never read."""
    out = np.array(x, copy=True)
    mask = np.triu(np.ones(out.shape, dtype=bool), 1) if lower else np.tril(np.ones(out.shape, dtype=bool), -1)
    out[mask] = 1e3 * gaussian(rng, int(mask.sum()), np.iscomplexobj(out))
    if np.iscomplexobj(out):
        out[np.diag_indices(out.shape[0])] += 1j * rng.standard_normal(out.shape[0])
    return out


def poison_unreferenced(x, lower, value=np.nan):
    """Copy of x whose strictly upper (lower=True) or strictly lower triangle is ``value``."""
    out = np.array(x, copy=True)
    mask = np.triu(np.ones(out.shape, dtype=bool), 1) if lower else np.tril(np.ones(out.shape, dtype=bool), -1)
    out[mask] = value
    return out


def not_positive_definite(rng, n, minor, hermitian=False):
    """A symmetric (Hermitian) matrix whose leading minors of order < ``minor`` are positive
    definite and whose leading minor of order ``minor`` (1-based) is not: LAPACK potrf's info is
    ``minor``."""
    b = spd_with_condition(rng, n, 10.0, hermitian)
    k = minor - 1
    # Schur complement of the leading k×k block at position k, made negative.
    if k:
        s = (b[k, k] - b[k, :k] @ np.linalg.solve(b[:k, :k], b[:k, k])).real
    else:
        s = b[0, 0].real
    b[k, k] -= s + 0.5
    return b


def grid_shapes(nprocs):
    """Grid shapes worth testing on ``nprocs`` ranks: 1×P, P×1 and 2×2 when P = 4."""
    shapes = [(1, nprocs), (nprocs, 1)]
    if nprocs == 4:
        shapes.append((2, 2))
    return list(dict.fromkeys(shapes))


def share_node_cores(comm):
    """Limit BLAS threads so the ranks sharing a node do not oversubscribe its cores (the
    solver's own policy, threads.policy_for)."""
    return policy_for(comm).line


def hard_tridiagonals(rng, n=300):
    """(name, d, e) of order about n: random, and the shapes that stress divide and conquer's
    deflation and its secular root finder (the copies: n // 40 equal blocks of order 40)."""
    copies = max(2, n // 40)
    d0, e0 = rng.standard_normal(40), rng.standard_normal(39)
    copies_d = np.tile(d0, copies)
    copies_e = np.concatenate([np.append(e0, 0.0) for _ in range(copies)])[:-1]
    weak_e = copies_e.copy()
    weak_e[39::40] = 1e-13 * rng.standard_normal(copies - 1)
    m = n // 2
    return [
        ("random", rng.standard_normal(n), rng.standard_normal(n - 1)),
        ("random odd order", rng.standard_normal(n + 37), rng.standard_normal(n + 36)),
        ("identity", np.ones(n), np.zeros(n - 1)),
        ("constant, tiny coupling", np.full(n, 3.0), np.full(n - 1, 1e-17)),
        ("toeplitz 2,1 (clustered)", np.full(n, 2.0), np.ones(n - 1)),
        ("graded", 10.0 ** (-np.arange(n) / 20), 10.0 ** (-np.arange(n - 1) / 20)),
        ("wilkinson W+", np.abs(np.arange(-m, m + 1)).astype(float), np.ones(2 * m)),
        ("exact copies (equal poles)", copies_d, copies_e),
        ("copies weakly coupled", copies_d, weak_e),
        ("negative couplings", rng.standard_normal(n), -np.abs(rng.standard_normal(n - 1))),
        ("huge scale", 1e150 * rng.standard_normal(n), 1e150 * rng.standard_normal(n - 1)),
    ]


def tridiagonal_ratios(d, e, w, z):
    """dstt21's measures of the k pairs (w, z) of the tridiagonal (d, e), numpy: (‖Zᵀ Z − I‖₁ / (n ε),
    ‖T Z − Z Λ‖₁ / (n ‖T‖₁ ε))."""
    n, eps = d.shape[0], np.finfo(np.float64).eps
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    norm = max(np.abs(t).sum(axis=0).max(), np.finfo(np.float64).tiny)
    ortho = np.abs(z.T @ z - np.eye(z.shape[1])).sum(axis=0).max() / (n * eps)
    resid = np.abs(t @ z - z * w).sum(axis=0).max() / (norm * n * eps)
    return ortho, resid


def straddled_tridiagonal(rng, q=30):
    """(d, e) of order 4q whose top merge (the tear at n // 2, where stedc.py, the one-rank CPU
    solve and the rows-by-rank tree at 2 and 4 ranks all tear first) deflates eigenpairs
    among the kept ones: T = diag(B, B, flip(B), B + δ) for a random tridiagonal B of
    order q, the blocks uncoupled except the middle tear (β random): about three quarters of
    the eigenpairs deflated. Each eigenvalue λ of B is then an eigenvalue of the copy away from the tear (z = 0 there: deflated), of the mirrored
    pair on both sides of the tear (equal poles: one rotated away, deflated, the other kept),
    and, 10⁻¹² away, of the perturbed copy (deflated): clusters of exactly equal and of nearly
    equal eigenvalues, deflated and kept eigenpairs side by side all through the spectrum."""
    bd, be = rng.standard_normal(q), rng.standard_normal(q - 1)
    d = np.concatenate((bd, bd, bd[::-1], bd + 1e-12 * rng.standard_normal(q)))
    e = np.concatenate((be, [0.0], be, [rng.standard_normal()], be[::-1], [0.0], be))
    return d, e


def selections_straddling(w):
    """0-based (first, last) selections of the ascending eigenvalues ``w`` whose edges cut
    through clusters (between two equal eigenvalues, between the closest pair that is not
    equal) and the plain ones: the lowest tenth, the highest eigenpair, one in the middle,
    all but the first."""
    n = w.shape[0]
    gaps = np.diff(w)
    cut_equal = int(np.argmin(gaps)) + 1
    unequal = np.flatnonzero(gaps > 0)
    cut_close = int(unequal[np.argmin(gaps[unequal])]) + 1 if unequal.size else n // 2
    low, high = sorted((cut_equal, cut_close))
    return [(0, max(1, n // 10)), (n - 1, n), (n // 2, n // 2 + 1), (1, n), (low, high if high > low else n),
            (0, low) if low else (0, 1)]


def merge_by_parts(xp, d, e, leaves, shares=2, block=3):
    """One top merge of the tridiagonal (d, e) made as the rows-by-rank divide and conquer
    makes it, in one process: the halves solved whole (stedc on xp, leaves by ``leaves``), then
    the merge prepared twice, once holding only the first half's components and once only the
    second's, the secular roots, Löwner's ẑ and U's row norms found in ``shares`` pieces and
    put together, U formed ``block`` rows at a time (only the columns each part needs).
    Returns the two (w, Qᵀ part) results; the eigenvalues must be the same bits and
    [part 1 | part 2] the eigenvectors of T (as rows)."""

    def in_shares(k, compute):
        pieces = [compute(*share(k, shares, r)) for r in range(shares)]
        return [xp.concatenate(parts) for parts in zip(*pieces)]

    n = d.shape[0]
    m = n // 2
    phases = Phases(xp, None)
    halves = [stedc_rows(xp, *block_de, leaves, 16, phases) for block_de in torn_blocks(d, e, [m])]
    (w1, qt1), (w2, qt2) = halves
    z = xp.concatenate((qt1[:, -1], qt2[:, 0]))
    results = []
    for part in (0, 1):
        held = (qt1, xp.zeros((n - m, 0))) if part == 0 else (xp.zeros((m, 0)), qt2)
        state = merge_prepare(xp, w1, held[0], w2, held[1], float(e[m - 1]), z, phases)
        origin, tau = in_shares(state.k, lambda first, last: secular_roots(
            xp, state.dk, state.zk, state.rho, first, last))
        zhat, = in_shares(state.k, lambda first, last: [loewner_z(
            xp, state.dk, state.zk, state.rho, origin, tau, block, first, last)])
        norms, = in_shares(state.k, lambda first, last: [row_norms(
            xp, state.dk, zhat, origin[first:last], tau[first:last])])
        results.append(merge_finish(xp, state, origin, tau, phases, block, zhat, norms))
    return results


def panel_with_condition(rng, m, w, cond, dtype):
    """An m × w panel (m >= w) of ``dtype`` with singular values from 1 down to 1/cond, spread
    geometrically: a random square or nearly square panel is too often ill-conditioned for a
    test that needs it well-conditioned (κ of a Gaussian 64 × 64 has a heavy tail)."""
    complex_ = np.dtype(dtype).kind == "c"
    u = random_orthogonal(rng, m, complex_)[:, :w]
    vh = random_orthogonal(rng, w, complex_)
    return ((u * np.geomspace(1, 1 / cond, w)) @ vh).astype(dtype)


def householder_qr_errors(panel, v, t, r, tau):
    """How far (V, T, R, tau) are from a Householder QR of ``panel`` (numpy arrays, panel_qr's
    layout), in units of the dtype's epsilon: (‖HᴴH - I‖_max, ‖H [R; 0] - panel‖_max / ‖panel‖_max,
    ‖T - larft(V, tau)‖_max / ‖T‖_max), H = I - V T Vᴴ; and whether V is unit lower trapezoidal
    and R upper triangular, exactly."""
    m, w = panel.shape
    eps = np.finfo(panel.dtype).eps
    h = np.eye(m, dtype=panel.dtype) - v @ t @ v.conj().T
    stacked = np.zeros_like(panel)
    stacked[:r.shape[0]] = r
    scale = max(np.abs(panel).max(), np.finfo(panel.dtype).tiny)
    k = min(m, w)
    shape_ok = (np.array_equal(np.triu(v[:k], 1), np.zeros_like(v[:k])) and np.all(np.diag(v[:k]) == 1)
                and np.array_equal(np.tril(r, -1), np.zeros_like(r)))
    return (np.abs(h.conj().T @ h - np.eye(m)).max() / eps,
            np.abs(h @ stacked - panel).max() / scale / eps,
            np.abs(t - larft(np, v, tau)).max() / max(np.abs(t).max(), 1) / eps,
            shape_ok)


def panel_cholqr2_poisoned(xp, panel, **where):
    """solvers._kernels.panel_cholqr2 on ``panel`` (numpy: its steps run on the host; cupy: the
    GPU's call, ``where`` its device= and stream=; any row stride), its outputs and scratch NaN
    first: ((V, T, R, tau) as numpy arrays, status)."""
    native, why = kernels()
    if native is None:
        raise ImportError(why)
    m, w = panel.shape
    v, out = xp.full((m, w), np.nan, dtype=panel.dtype), xp.full((4 * w + 1, w), np.nan, dtype=panel.dtype)
    scratch = xp.full(native.panel_cholqr2_scratch_elems(m, w), np.nan, dtype=panel.dtype)
    status = xp.full((), -1, dtype=np.int32)
    a, *outputs = (x.ctypes.data if isinstance(x, np.ndarray) else x.data.ptr
                   for x in (panel, v, out, scratch, status))
    native.panel_cholqr2(native.DTYPES[panel.dtype.name], m, w, a, panel.strides[0] // panel.itemsize, *outputs,
                         ORTHOGONALITY_LIMIT, **where)
    factors = (v, out[2 * w:3 * w], out[3 * w:4 * w], out[4 * w])
    return tuple(x if isinstance(x, np.ndarray) else x.get() for x in factors), int(status)


def within_eps(got, expected, dtype, factor):
    """Whether max |x - y| <= factor · eps(dtype) · max(max |y|, 1) for every pair (x, y) of
    numpy arrays from ``got`` and ``expected``."""
    eps = np.finfo(dtype).eps
    return all(np.abs(x - y).max() <= factor * eps * max(np.abs(y).max(), 1) for x, y in zip(got, expected))
