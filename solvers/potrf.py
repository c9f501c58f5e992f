"""potrf: distributed blocked Cholesky factorization B = L Lᴴ (lower, right-looking; Lᵀ for
real B).

Per block column k:
  1. the owning grid column sums its pieces of the panel (rows k*nb:) → whole panel there;
  2. those ranks factor the diagonal block and solve the sub-diagonal part against it
     (redundantly, on identical data, so no extra broadcast of L_kk is needed);
  3. the factored panel, with potrf's info riding along in a spare row, is broadcast along
     grid rows — so every rank learns of a failure at the same step and raises the same error;
  4. every rank updates its own trailing blocks: B22 -= L21 L21ᴴ.
Only the lower triangle of B is read; the result's strict upper triangle is zero. One rank
holding all of B makes one LAPACK / cuSOLVER potrf call instead (the loop there would cost a
host round trip per block column for nothing).
"""
from .backend.arrays import cholesky_lower, cholesky_lower_whole, solve_triangular
from .distributed.panels import bcast_block_col, block_span, gather_block_col
from .errors import NotPositiveDefiniteError


def potrf(b, coll):
    """Cholesky factor of the SPD / HPD matrix whose lower triangle is ``b`` (a DistMatrix, not
    modified; its diagonal must be real). Raises NotPositiveDefiniteError (same info) on every
    rank if B is not positive definite."""
    n = b.shape[0]
    xp = b.xp
    fac = b.triangle(lower=True)
    if fac.grid.size == 1:
        fac.local, info = cholesky_lower_whole(xp, fac.local)
        if info:
            raise NotPositiveDefiniteError(info, n)
        return fac.triangle(lower=True)
    rows, cols = fac.device_index()
    for k in range((n + fac.nb - 1) // fac.nb):
        j0, j1 = block_span(k, fac.nb, n)
        panel = gather_block_col(fac, k, j0, coll, spare_rows=1)
        if panel is not None:
            _factor_panel(xp, panel, j0, j1)
        panel = bcast_block_col(fac, k, panel, (n - j0 + 1, j1 - j0), coll)
        info = int(panel[-1, 0].real)
        if info:
            raise NotPositiveDefiniteError(info, n)
        panel = panel[:-1]
        lr0 = fac.first_local_row(j0)
        if fac.grid.mycol == fac.block_owner_col(k):
            fac.local[lr0:, fac.local_block_cols(k)] = panel[rows[lr0:] - j0]
        lr1, lc1 = fac.first_local_row(j1), fac.first_local_col(j1)
        fac.local[lr1:, lc1:] -= panel[rows[lr1:] - j0] @ panel[cols[lc1:] - j0].conj().T
    return fac.triangle(lower=True)


def _factor_panel(xp, panel, j0, j1):
    """In place: [B_kk; B_21] → [L_kk; B_21 L_kk⁻ᴴ]; a failure's global order goes in the
    spare last row (0 = success)."""
    width = j1 - j0
    lkk, info = cholesky_lower(xp, panel[:width])
    if info:
        panel[-1, 0] = j0 + info
        return
    panel[:width] = lkk
    body = panel[width:-1]
    if body.shape[0]:
        # B21 L_kk⁻ᴴ = (L_kk⁻¹ B21ᴴ)ᴴ
        body[...] = solve_triangular(xp, lkk, body.conj().T, lower=True).conj().T
