"""trsm / trmm: distributed left-side triangular solve and multiply with a lower-triangular L.

    trsm: B ← op(L)⁻¹ B        trmm: B ← op(L) B        op(L) = L or Lᴴ (Lᵀ for real L)

Used by sygst / hegst (two of them per reduction) and for the final back-transformation of the
eigenvectors (x = L⁻ᴴ y for itypes 1, 2; x = L y for itype 3).

Both are one loop over the diagonal blocks k of op(L) (a solve on one rank is one library call). The panel of op(L) for block k (column k
of L, or row k of L conjugate-transposed) is replicated; block row k of B lives on one grid row, which
applies the diagonal block and broadcasts the result down the grid columns; every rank then
updates its local rows. A solve walks the triangle from its top (forward substitution for a
lower op(L), backward for an upper one); a multiply walks it in the opposite direction so that
every block row of B is still original when it is read.
"""
from .backend.arrays import solve_triangular
from .distributed.panels import block_span, replicate_block_col, replicate_block_row


def trsm(lfac, b, coll, trans=False):
    """B ← op(L)⁻¹ B in place (b is returned)."""
    return _left_triangular(lfac, b, coll, trans, solve=True)


def trmm(lfac, b, coll, trans=False):
    """B ← op(L) B in place (b is returned)."""
    return _left_triangular(lfac, b, coll, trans, solve=False)


def _left_triangular(lfac, b, coll, trans, solve):
    n = lfac.shape[0]
    if lfac.shape != (n, n) or b.shape[0] != n or b.nb != lfac.nb:
        raise ValueError(f"triangular op: L {lfac.shape} and B {b.shape} (nb {lfac.nb}/{b.nb}) "
                         "do not conform")
    xp, nb = b.xp, b.nb
    if solve and b.grid.size == 1:
        # One rank holds L and B whole: one library solve (LAPACK's / cuBLAS's trsm), whose
        # blocking is the library's, where the loop below makes a small solve, a broadcast and a
        # product per block.
        b.local[...] = solve_triangular(xp, lfac.local, b.local, lower=True, trans=trans)
        return b
    op_lower = not trans
    nblocks = (n + nb - 1) // nb
    forward = solve == op_lower
    order = range(nblocks) if forward else range(nblocks - 1, -1, -1)
    rows, _ = b.device_index()
    for k in order:
        j0, j1 = block_span(k, nb, n)
        # Column block k of op(L), for the rows this step touches: below the diagonal block
        # (lower op) or above it (upper op); rows j0:j1 are the diagonal block itself.
        # ``base`` is the global row of the panel's first row.
        if op_lower:
            base, panel = j0, replicate_block_col(lfac, k, j0, coll)   # rows j0:n
        else:
            base, panel = 0, replicate_block_row(lfac, k, j1, coll).conj().T  # rows 0:j1
        diag = panel[j0 - base:j1 - base]
        diag = xp.tril(diag) if op_lower else xp.triu(diag)

        owner_row = b.grid.myrow == b.block_owner_row(k)
        if owner_row:
            lrk = b.local_block_rows(k)
            block = b.local[lrk]
            if solve:
                block = solve_triangular(xp, diag, block, lower=op_lower)
                b.local[lrk] = block
            xk = block.copy()          # the buffer broadcast; for trmm, the original B_k
        else:
            xk = xp.empty((j1 - j0, b.local.shape[1]), dtype=b.dtype)
        coll.bcast(xk, root=b.block_owner_row(k), scope="col")

        # Rows touched by block k: after it for a lower op(L), before it for an upper one.
        touched = slice(b.first_local_row(j1), None) if op_lower else slice(0, b.first_local_row(j0))
        update = panel[rows[touched] - base] @ xk
        if solve:
            b.local[touched] -= update
        else:
            b.local[touched] += update
            if owner_row:
                b.local[lrk] = diag @ xk
    return b

