"""sygst: reduction of the generalized problem to a standard one, given B = L Lᵀ.

    itype 1   A x = λ B x   →   C = L⁻¹ A L⁻ᵀ,   x = L⁻ᵀ y
    itype 2   A B x = λ x   →   C = Lᵀ A L,      x = L⁻ᵀ y
    itype 3   B A x = λ x   →   C = Lᵀ A L,      x = L y

Done as two left-side triangular operations with a transpose between them
(C = L⁻¹ (L⁻¹ A)ᵀ, since C is symmetric; likewise Lᵀ (Lᵀ A)ᵀ), reusing the distributed
trsm/trmm. That costs about twice the flops of LAPACK's symmetric-aware sygst but keeps one
well-tested kernel. The result is re-symmetrized from its lower triangle, so sytrd works on an
exactly symmetric matrix.
"""
from .distributed.redistribute import symmetrize, transpose
from .trsm import trmm, trsm


def sygst(a, lower, lfac, itype, coll):
    """C for ``itype`` from A (DistMatrix; only its lower/upper triangle is read) and L."""
    if itype not in (1, 2, 3):
        raise ValueError(f"itype must be 1, 2 or 3, got {itype}")
    y = symmetrize(a, lower, coll)
    if itype == 1:
        trsm(lfac, y, coll)                                   # Y = L⁻¹ A
        c = trsm(lfac, transpose(y, coll), coll)              # L⁻¹ Yᵀ = L⁻¹ A L⁻ᵀ
    else:
        trmm(lfac, y, coll, trans=True)                       # Y = Lᵀ A
        c = trmm(lfac, transpose(y, coll), coll, trans=True)  # Lᵀ Yᵀ = Lᵀ A L
    return symmetrize(c, True, coll)
