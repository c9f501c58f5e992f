"""sygst / hegst: reduction of the generalized problem to a standard one, given B = L Lᴴ.

    itype 1   A x = λ B x   →   C = L⁻¹ A L⁻ᴴ,   x = L⁻ᴴ y
    itype 2   A B x = λ x   →   C = Lᴴ A L,      x = L⁻ᴴ y
    itype 3   B A x = λ x   →   C = Lᴴ A L,      x = L y
(ᴴ is ᵀ for real data: sygst; complex Hermitian: hegst.)

Done as two left-side triangular operations with a conjugate transpose between them
(C = L⁻¹ (L⁻¹ A)ᴴ, since C is Hermitian; likewise Lᴴ (Lᴴ A)ᴴ), reusing the distributed
trsm/trmm. That costs about twice the flops of LAPACK's symmetric-aware sygst but keeps one
well-tested kernel. Only the lower triangle of the result is meant to be read: syevd, which
takes it from here, completes the Hermitian matrix from it, so sytrd works on an exactly
Hermitian matrix.

On one rank, itype 1 has two ways (plan.SYGST_ONE_RANK_ITYPE1 chooses):

- "solves": Y = L⁻¹ A by one library solve, then only C's lower triangle of C = Y L⁻ᴴ, column
  block by column block, where block J's rows from J on need only the blocks of C left of J in
  those rows (lower-triangle entries themselves), one GEMM and one small solve a block: n³ + n³/3
  flops.
- "blocked": LAPACK dsygst's blocked order on the lower triangle alone, n³ flops, most of them
  in the her2k-type update of the trailing triangle. For each diagonal block k (nb columns):

      A₁₁ ← L₁₁⁻¹ A₁₁ L₁₁⁻ᴴ;   A₂₁ ← A₂₁ L₁₁⁻ᴴ - ½ L₂₁ A₁₁;
      A₂₂ ← A₂₂ - A₂₁ L₂₁ᴴ - L₂₁ A₂₁ᴴ (lower triangle, in column chunks);
      A₂₁ ← L₂₂⁻¹ (A₂₁ - ½ L₂₁ A₁₁).
"""
from .backend.arrays import (is_numpy, solve_lower_adjoint_right, solve_lower_adjoint_right_into,
                             solve_lower_into, subtract_product)
from .distributed.redistribute import lower_triangle, symmetrize, transpose
from .plan import sygst_method
from .trsm import trmm, trsm

LOWER_SOLVE_BLOCK = 1024   # columns of C per step of the one-rank lower-triangle solve
BLOCKED_NB = 2048          # columns per diagonal block of the blocked way (below;
                           # docs/PERFORMANCE.md#solver-sygst-method)
HER2K_CHUNK = 2048         # columns of the trailing triangle per update GEMM of the blocked way


def sygst(a, lower, lfac, itype, coll, method=None):
    """C for ``itype`` from A (DistMatrix; only its lower/upper triangle is read) and L; read
    C's lower triangle only. ``method``: one rank's way for itype 1, plan.SYGST_ONE_RANK (default
    plan.SYGST_ONE_RANK_ITYPE1 of the device)."""
    if itype not in (1, 2, 3):
        raise ValueError(f"itype must be 1, 2 or 3, got {itype}")
    method = sygst_method(method, not is_numpy(a.xp))
    if itype == 1 and a.grid.size == 1:
        coll.note("sygst", method)
        if method == "blocked":
            y = lower_triangle(a, lower, coll)
            _blocked_lower(y.xp, lfac.local, y.local)
            return y
    y = symmetrize(a, lower, coll)
    if itype == 1:
        trsm(lfac, y, coll)                                                   # Y = L⁻¹ A
        if y.grid.size == 1:
            _lower_of_right_adjoint_solve(y.xp, lfac.local, y.local)         # tril(Y L⁻ᴴ)
            return y
        return trsm(lfac, transpose(y, coll, conjugate=True), coll)           # L⁻¹ Yᴴ = L⁻¹ A L⁻ᴴ
    trmm(lfac, y, coll, trans=True)                                           # Y = Lᴴ A
    return trmm(lfac, transpose(y, coll, conjugate=True), coll, trans=True)   # Lᴴ Yᴴ = Lᴴ A L


def _lower_of_right_adjoint_solve(xp, lfac, y):
    """y's lower triangle ← that of y L⁻ᴴ in place (L the lower triangle of ``lfac``); the strict
    upper triangle is left partly solved, not to be read."""
    n = y.shape[0]
    for j0 in range(0, n, LOWER_SOLVE_BLOCK):
        j1 = min(j0 + LOWER_SOLVE_BLOCK, n)
        block = y[j0:, j0:j1]
        if j0:
            block -= y[j0:, :j0] @ lfac[j0:j1, :j0].conj().T
        y[j0:, j0:j1] = solve_lower_adjoint_right(xp, lfac[j0:j1, j0:j1], block)


def _blocked_lower(xp, lfac, a):
    """a's lower triangle ← that of L⁻¹ A L⁻ᴴ in place (A Hermitian, its lower triangle read; L
    the lower triangle of ``lfac``), in the blocked order of the module's docstring; a's strict
    upper triangle is left as it is, not to be read."""
    n, nb = a.shape[0], BLOCKED_NB
    for k0 in range(0, n, nb):
        k1 = min(k0 + nb, n)
        l11 = lfac[k0:k1, k0:k1]
        a11 = _hermitian(xp, a[k0:k1, k0:k1])
        solve_lower_adjoint_right_into(xp, l11, solve_lower_into(xp, l11, a11))
        a11 = _hermitian(xp, a11)
        a[k0:k1, k0:k1] = a11
        if k1 == n:
            break
        a21, l21 = a[k1:, k0:k1], lfac[k1:, k0:k1]
        solve_lower_adjoint_right_into(xp, l11, a21)
        half = 0.5 * (l21 @ a11)
        a21 -= half
        _her2k_lower(xp, a[k1:, k1:], a21, l21, HER2K_CHUNK)
        a21 -= half
        solve_lower_into(xp, lfac[k1:, k1:], a21)


def _hermitian(xp, block):
    """The Hermitian matrix whose lower triangle is ``block``'s (a new array)."""
    lower = xp.tril(block)
    return lower + xp.tril(lower, -1).conj().T


def _her2k_lower(xp, c, x, y, chunk):
    """c's lower triangle -= x yᴴ + y xᴴ, in column chunks (a chunk's GEMM covers its rows from
    its first column on: the diagonal chunk's upper part too, which is not read)."""
    m = c.shape[0]
    left, right = xp.concatenate([x, y], axis=1), xp.concatenate([y, x], axis=1)
    for c0 in range(0, m, chunk):
        c1 = min(c0 + chunk, m)
        subtract_product(xp, c[c0:, c0:c1], left[c0:], right[c0:c1], adjoint_b=True)
