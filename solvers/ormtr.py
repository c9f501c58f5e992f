"""ormtr / unmtr: back-transformation Z ← Q Z with the Q of sytrd / hetrd (Q = H₀ H₁ ⋯ H_{n-2},
H_j = I - tau_j v_j v_jᴴ; for real data vᴴ = vᵀ and this is ormtr).

Blocked with the compact WY form: each panel's reflectors are applied at once as
I - V T Vᴴ, last panel first (a host run groups HOST_REFLECTORS of them, whole panels, into
one such product). V is replicated per panel (one column-Allreduce + row-Bcast), then Vᴴ Z
needs one Allreduce over each grid column (nb × local columns), and the update is local.

The same applies the Q of sy2sb / he2hb (the two-stage reduction's first stage): its reflector
of column j starts ``offset`` = b rows below the diagonal instead of one, so a block column of
nb reflectors is again one staircase I - V T Vᴴ (stage ormtr_sy2sb / unmtr_he2hb).
"""
from .backend.arrays import is_numpy, subtract_product
from .distributed.panels import block_span, replicate_block_col
from .householder import larft

HOST_REFLECTORS = 128   # reflectors a host run applies at once: whole panels grouped, so the two
                        # GEMMs of each group have an inner dimension of 128, not nb = 32 (one
                        # rank, n = 2048, one BLAS thread: ormtr 0.80 → 0.58 s of CPU time). A GPU
                        # run applies one panel at a time, as measured there.


def ormtr(c, tau, z, coll, offset=1):
    """Apply Q (reflectors stored by sytrd in ``c``, factors ``tau``) to DistMatrix ``z`` in
    place. ``offset``: rows between column j and the first entry of its reflector (1 for
    sytrd; the bandwidth for sy2sb)."""
    n = c.shape[0]
    xp, nb = z.xp, c.nb
    if z.shape[0] != n or z.nb != nb:
        raise ValueError(f"ormtr: Q is {n}x{n} (nb {nb}) but Z is {z.shape} (nb {z.nb})")
    rows, _ = z.device_index()
    group = max(1, HOST_REFLECTORS // nb) if is_numpy(xp) else 1
    panels = (n + nb - 1) // nb
    for k0 in range((panels - 1) // group * group, -1, -group):   # the last group first
        # A last panel whose reflectors would start past row n-1 has none.
        ks = [k for k in range(k0, min(k0 + group, panels)) if k * nb + offset < n]
        if not ks:
            continue
        j0, j1 = k0 * nb, block_span(ks[-1], nb, n)[1]
        v = _reflectors(c, ks, j0 + offset, coll)       # rows j0+offset:n, columns j0:j1
        t = larft(xp, v, tau[j0:j1])
        lr = z.first_local_row(j0 + offset)
        v_local = v[rows[lr:] - (j0 + offset)]
        vhz = xp.ascontiguousarray(v_local.conj().T @ z.local[lr:])
        coll.allreduce(vhz, scope="col")
        subtract_product(xp, z.local[lr:], v_local, t @ vhz)
    return z


def _reflectors(c, ks, r0, coll):
    """The reflectors of the block columns ``ks`` (consecutive) side by side, rows r0: on every
    rank: each panel's own rows below the previous panels' are zeros, as each reflector's are
    above its start, so together they are one staircase I - V T Vᴴ."""
    if len(ks) == 1:
        return replicate_block_col(c, ks[0], r0, coll)
    j0, nb = ks[0] * c.nb, c.nb
    v = c.xp.zeros((c.shape[0] - r0, block_span(ks[-1], nb, c.shape[1])[1] - j0), dtype=c.dtype)
    for k in ks:
        k0, k1 = block_span(k, nb, c.shape[1])
        v[k0 - j0:, k0 - j0:k1 - j0] = replicate_block_col(c, k, r0 + k0 - j0, coll)
    return v
