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

On one rank, itype 1's second solve forms only that lower triangle: C = Y L⁻ᴴ column block by
column block, where block J's rows from J on need only the blocks of C left of J in those rows
(lower-triangle entries themselves), one GEMM and one small solve a block. That is n³/3 flops
where the whole solve is n³: on an H100 sygst took 0.19 s where it took 0.26 s (float64, n =
16384), hegst 0.091 s where 0.129 s (complex128, 8192; docs/PERFORMANCE.md).
"""
from .backend.arrays import solve_lower_adjoint_right
from .distributed.redistribute import symmetrize, transpose
from .trsm import trmm, trsm

LOWER_SOLVE_BLOCK = 1024   # columns of C per step of the one-rank lower-triangle solve


def sygst(a, lower, lfac, itype, coll):
    """C for ``itype`` from A (DistMatrix; only its lower/upper triangle is read) and L; read
    C's lower triangle only."""
    if itype not in (1, 2, 3):
        raise ValueError(f"itype must be 1, 2 or 3, got {itype}")
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
