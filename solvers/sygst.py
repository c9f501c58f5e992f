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
"""
from .distributed.redistribute import symmetrize, transpose
from .trsm import trmm, trsm


def sygst(a, lower, lfac, itype, coll):
    """C for ``itype`` from A (DistMatrix; only its lower/upper triangle is read) and L; read
    C's lower triangle only."""
    if itype not in (1, 2, 3):
        raise ValueError(f"itype must be 1, 2 or 3, got {itype}")
    y = symmetrize(a, lower, coll)
    if itype == 1:
        trsm(lfac, y, coll)                                                   # Y = L⁻¹ A
        return trsm(lfac, transpose(y, coll, conjugate=True), coll)           # L⁻¹ Yᴴ = L⁻¹ A L⁻ᴴ
    trmm(lfac, y, coll, trans=True)                                           # Y = Lᴴ A
    return trmm(lfac, transpose(y, coll, conjugate=True), coll, trans=True)   # Lᴴ Yᴴ = Lᴴ A L
