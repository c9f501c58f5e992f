"""ormtr / unmtr: back-transformation Z ← Q Z with the Q of sytrd / hetrd (Q = H₀ H₁ ⋯ H_{n-2},
H_j = I - tau_j v_j v_jᴴ; for real data vᴴ = vᵀ and this is ormtr).

Blocked with the compact WY form: each panel's reflectors are applied at once as
I - V T Vᴴ, last panel first. V is replicated per panel (one column-Allreduce + row-Bcast), then
Vᴴ Z needs one Allreduce over each grid column (nb × local columns), and the update is local.

The same applies the Q of sy2sb / he2hb (the two-stage reduction's first stage): its reflector
of column j starts ``offset`` = b rows below the diagonal instead of one, so a block column of
nb reflectors is again one staircase I - V T Vᴴ (stage ormtr_sy2sb / unmtr_he2hb).
"""
from .backend.arrays import subtract_product
from .distributed.panels import block_span, replicate_block_col
from .householder import larft


def ormtr(c, tau, z, coll, offset=1):
    """Apply Q (reflectors stored by sytrd in ``c``, factors ``tau``) to DistMatrix ``z`` in
    place. ``offset``: rows between column j and the first entry of its reflector (1 for
    sytrd; the bandwidth for sy2sb)."""
    n = c.shape[0]
    xp, nb = z.xp, c.nb
    if z.shape[0] != n or z.nb != nb:
        raise ValueError(f"ormtr: Q is {n}x{n} (nb {nb}) but Z is {z.shape} (nb {z.nb})")
    rows, _ = z.device_index()
    for k in range((n + nb - 1) // nb - 1, -1, -1):
        j0, j1 = block_span(k, nb, n)
        if j0 + offset >= n:     # a last panel whose reflectors would start past row n-1
            continue
        v = replicate_block_col(c, k, j0 + offset, coll)     # rows j0+offset:n
        t = larft(xp, v, tau[j0:j1])
        lr = z.first_local_row(j0 + offset)
        v_local = v[rows[lr:] - (j0 + offset)]
        vhz = xp.ascontiguousarray(v_local.conj().T @ z.local[lr:])
        coll.allreduce(vhz, scope="col")
        subtract_product(xp, z.local[lr:], v_local, t @ vhz)
    return z
