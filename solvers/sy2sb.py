"""sy2sb / he2hb: dense → band, the first stage of the two-stage tridiagonalization.

Qᴴ C Q = B with B Hermitian of bandwidth b (LAPACK's dsytrd_sy2sb / zhetrd_he2hb, lower
storage), Q = Q₀ Q₁ ⋯, one block reflector per panel of b columns. Panel p (columns j0:j0+b)
is the QR factorization of its rows below the band, C[j0+b:, j0:j0+b] = Q_p R (Q_p = I - V T Vᴴ;
panel_qr.py: CholeskyQR2 with Householder reconstruction, or geqrf + larft), followed by the
two-sided update of the trailing matrix in the her2k form

    X = C₂₂ V T,   W = X - ½ V (Tᴴ (Vᴴ X)),   C₂₂ ← Q_pᴴ C₂₂ Q_p = C₂₂ - V Wᴴ - W Vᴴ

whose products are GEMMs of inner dimension b and 2b: the whole stage is matrix-matrix work,
where one-stage sytrd reads the trailing matrix once per column (a symv each).

Only the lower triangle is kept up to date, in chunks of columns: chunk c of the trailing
matrix is updated in its rows of chunk ≥ c, so a block above the diagonal is stale unless it
lies in a diagonal chunk. X = C₂₂ V then reads each block where it is kept: a block of a chunk
row above its column's chunk contributes C_IJ V_J to X_I and, for the block it stands for
above the diagonal, C_IJᴴ V_I to X_J. Larger chunks mean fewer, larger GEMMs and more redundant
work on the diagonal chunks (the whole trailing matrix when the chunk is n: 2n³ flops
instead of 4n³/3).

Distribution (ScaLAPACK's 2D block-cyclic layout; b divides nb, so a panel lies in one block
column): the panel's rows j0: are summed over the grid column owning it (zero-padded, exact),
its first rank factors it and broadcasts the diagonal block, V, R, T and tau to the whole grid
in one message, so every rank holds the same bits of them; each rank's partial products of
X = C₂₂ V (its rows and, transposed, its columns) are summed in one Allreduce over the grid;
W and the update are local. Per panel: a column-Allreduce, a Bcast and an Allreduce, none at
one rank.

Outputs: the band on every rank, ab (n × (b+1)), ab[j, d] = B[j+d, j] (LAPACK's lower band
storage, transposed to rows), the same bits everywhere (from the broadcasts; the last diagonal
block, which no panel reaches, by a zero-padded Allreduce); tau (n), column j's reflector
factor; and C holding the reflectors: column j's v_j in rows j+b: with its unit leading entry
explicit, zero elsewhere (ormtr.ormtr(..., offset=b) applies Q from there).
"""
import numpy as np

from .backend.arrays import add_product, array_module, device_of, is_numpy, subtract_product
from .distributed.panels import gather_columns
from .kernels import kernels
from .panel_qr import panel_qr
from .phases import Phases
from .plan import SY2SB_CHUNK, check_band, panel_method


def panel_count(n, band):
    """Panels of sy2sb for order n: one per b columns while at least two rows lie below the
    band (with one row there is nothing outside the band to annihilate)."""
    return max(0, -(-(n - band - 1) // band))


def sy2sb(c, coll, band, chunk=None, timings=None, panel="auto"):
    """Reduce the full Hermitian DistMatrix ``c`` (both triangles stored) to bandwidth ``band``
    in place; returns (ab, tau) as described in the module's docstring. ``chunk``: columns per
    trailing-update GEMM (default plan.SY2SB_CHUNK of the array's device). ``timings``: a dict that
    gets the seconds of each panel's phases summed ("panel": gather, QR, broadcast; "product": X
    and W; "update": the trailing update), the device synchronized around each
    (solvers.bench.sy2sb); None (the solver's) times nothing and synchronizes nothing. ``panel``: the panels' factorization,
    plan.PANEL_METHODS ("auto": plan.AUTO_PANEL, the one measured faster on the array's device)."""
    n = c.shape[0]
    check_band(band, c.nb)
    xp = c.xp
    chunk = max(1, chunk or SY2SB_CHUNK[device_of(xp)])
    ab = xp.zeros((n, band + 1), dtype=c.dtype)
    tau = xp.zeros(n, dtype=c.dtype)
    panels = panel_count(n, band)
    coll.note("band", band)
    coll.note("panels", panels)
    phases = Phases(xp, timings)
    methods = {}
    deferred = _deferred_check(c, band, panels, panel)
    statuses = None if deferred is None else deferred[1]
    for p in range(panels):
        _panel(c, p * band, band, ab, tau, coll, chunk, phases, methods, panel,
               None if statuses is None else statuses[p:p + 1])
    if statuses is not None:
        failed = np.flatnonzero(xp.asnumpy(statuses))      # the reduction's one wait for its panels
        if failed.size:     # a panel CholeskyQR2 cannot be trusted with: again from c, checking each
            c.local[...] = deferred[0]
            ab[...] = 0
            tau[...] = 0
            methods.clear()
            for p in range(panels):
                _panel(c, p * band, band, ab, tau, coll, chunk, phases, methods, panel)
        coll.note("panel check", f"deferred: panel {int(failed[0])} failed it, reduced again checking each panel"
                  if failed.size else "deferred (one read of all panels' statuses)")
    coll.note("panel QR", ", ".join(f"{count} {name}" for name, count in sorted(methods.items())) or "none")
    _last_block(c, panels * band, ab, coll)
    _keep_reflectors(c, band, panels * band)
    return ab, tau


def _deferred_check(c, band, panels, method):
    """(snapshot of c's local array, int32 statuses, one a panel) where sy2sb checks its panels'
    CholeskyQR2 once at the end instead of once a panel: one rank on a GPU whose panels take the
    one-call CholeskyQR2 (a read-back a panel made the host wait for the device, then the device
    for the host's next launches); None elsewhere, or where the snapshot (what a failed check
    starts again from, c's size) does not fit in device memory."""
    xp = c.xp
    if is_numpy(xp) or c.grid.size != 1 or panels == 0:
        return None
    native, _ = kernels()
    resolved = panel_method(method, not is_numpy(xp))
    if native is None or resolved != "cholqr2" or band > native.PANEL_CHOLQR2_MAX_WIDTH:
        return None
    try:
        return c.local.copy(), xp.zeros(panels, dtype=np.int32)
    except xp.cuda.memory.OutOfMemoryError:
        return None


def _panel(c, j0, b, ab, tau, coll, chunk, phases, methods, method, status=None):
    xp, grid = c.xp, c.grid
    n = c.shape[0]
    t0 = j0 + b                 # the trailing matrix: rows and columns t0:
    m = n - t0
    owner = c.block_owner_col(j0 // c.nb)
    root = grid.rank_of(0, owner)
    with phases("panel"):
        # [diagonal block (b rows); panel (m rows); R (b); T (b); tau (1)], gathered as rows j0:n.
        if grid.size == 1:      # the panel where it lies (a view of c; its QR may overwrite it)
            buf = c.local[j0:, j0:t0]
        else:
            buf = gather_columns(c, j0, t0, j0, coll, spare_rows=2 * b + 1)
        if grid.rank == root:
            v, t, r, tau_p, method = panel_qr(xp, buf[b:b + m], method, status)
            methods[method] = methods.get(method, 0) + 1
            diag = buf[:b]
        if grid.size > 1:       # packed into buf for the one broadcast
            if grid.rank == root:
                buf[b:b + m] = v
                buf[b + m:b + m + r.shape[0]] = r
                buf[b + m + b:b + m + 2 * b] = t
                buf[b + m + 2 * b, :tau_p.shape[0]] = tau_p
            elif buf is None:
                buf = xp.empty((m + 3 * b + 1, b), dtype=c.dtype)
            coll.bcast(buf, root=root, scope="all")
            diag, v, r = buf[:b], buf[b:b + m], buf[b + m:b + m + min(m, b)]
            t, tau_p = buf[b + m + b:b + m + 2 * b], buf[b + m + 2 * b]
        _band_entries(ab, j0, diag, r)
        tau[j0:t0] = tau_p
        if grid.mycol == owner:    # the reflectors, where ormtr will read them
            lr = c.first_local_row(t0)
            first = c.local_block_cols(j0 // c.nb).start + j0 % c.nb
            c.local[lr:, first:first + b] = v[_rows(c, lr, c.local.shape[0], t0)]
    _two_sided_update(c, t0, v, t, coll, chunk, phases)


def _band_entries(ab, j0, *blocks):
    """ab[j0 + j, d] = S[j + d, j] for the w columns j of S, the ``blocks`` stacked (global rows
    j0: of columns j0:j0+w, rows past them read as zero; only S's entries on or below its
    diagonal are read): one strided copy into ab's rows j0:j0+w, where indexing ab by each band
    entry took some ten small GPU launches a panel."""
    xp = array_module(ab)
    w, reach = blocks[0].shape[1], ab.shape[1]
    stacked = xp.zeros((w + reach - 1, w), dtype=ab.dtype)
    row = 0
    for block in blocks:
        rows = min(block.shape[0], stacked.shape[0] - row)
        stacked[row:row + rows] = block[:rows]
        row += rows
    item = stacked.itemsize
    ab[j0:j0 + w] = xp.lib.stride_tricks.as_strided(stacked, shape=(w, reach), strides=((w + 1) * item, w * item))


def _rows(dm, lo, hi, base):
    """Index into a replicated array (row 0 ↔ global ``base``) of local rows lo:hi: a slice
    when they are consecutive globally (one grid row), else the device index array."""
    return _index(dm.rows, dm.device_index()[0], lo, hi, base)


def _cols(dm, lo, hi, base):
    return _index(dm.cols, dm.device_index()[1], lo, hi, base)


def _index(host, dev, lo, hi, base):
    if hi <= lo:
        return slice(0, 0)
    if host[hi - 1] - host[lo] == hi - 1 - lo:
        return slice(int(host[lo]) - base, int(host[hi - 1]) - base + 1)
    return dev[lo:hi] - base


def _two_sided_update(c, t0, v, t, coll, chunk, phases):
    """C₂₂ ← Q_pᴴ C₂₂ Q_p on the kept (lower, chunked) part of the local blocks."""
    xp, n = c.xp, c.shape[0]
    local = c.local
    nrows = local.shape[0]
    spans = []
    for start in range(t0 - t0 % chunk, n, chunk):
        g0, g1 = max(start, t0), min(start + chunk, n)
        c0, c1 = c.first_local_col(g0), c.first_local_col(g1)
        if c1 > c0:
            spans.append((c.first_local_row(g0), c.first_local_row(g1), c0, c1))
    with phases("product"):
        y = xp.zeros(v.shape, dtype=c.dtype)          # C₂₂ V, zero-padded: summed over the grid
        for r0, r1, c0, c1 in spans:
            block_cols = _cols(c, c0, c1, t0)
            _accumulate(xp, y, _rows(c, r0, nrows, t0), local[r0:, c0:c1], v[block_cols], False)
            if r1 < nrows:      # rows of later chunks stand for the blocks above the diagonal too
                _accumulate(xp, y, block_cols, local[r1:, c0:c1], v[_rows(c, r1, nrows, t0)], True)
        coll.allreduce(y, scope="all")
        x = y @ t
        w = x - 0.5 * (v @ (t.conj().T @ (v.conj().T @ x)))
    with phases("update"):
        left, right = xp.concatenate([v, w], axis=1), xp.concatenate([w, v], axis=1)
        for r0, _, c0, c1 in spans:
            subtract_product(xp, local[r0:, c0:c1], xp.ascontiguousarray(left[_rows(c, r0, nrows, t0)]),
                             right[_cols(c, c0, c1, t0)], adjoint_b=True)


def _accumulate(xp, y, index, block, v_part, adjoint):
    """y[index] += op(block) @ v_part, op = conjugate transpose where ``adjoint``: into y's rows
    where they lie when ``index`` is a slice (one grid row), reading the block of the trailing
    matrix where it lies (add_product); through a gathered copy otherwise."""
    if isinstance(index, slice):
        add_product(xp, y[index], block, v_part, adjoint)
    else:
        y[index] += (block.conj().T if adjoint else block) @ v_part


def _last_block(c, j0, ab, coll):
    """The band entries of the trailing block rows and columns j0: that no panel reached
    (at most b+1 of them: every entry of its lower triangle is in the band)."""
    xp, n = c.xp, c.shape[0]
    size = n - j0
    if size <= 0:
        return
    block = xp.zeros((size, size), dtype=c.dtype)
    r0, c0 = c.first_local_row(j0), c.first_local_col(j0)
    rows, cols = c.device_index()
    block[(rows[r0:] - j0)[:, None], (cols[c0:] - j0)[None, :]] = c.local[r0:, c0:]
    coll.allreduce(block, scope="all")
    _band_entries(ab, j0, block)


def _keep_reflectors(c, band, end):
    """Zero every local entry of ``c`` but the reflectors: rows >= column + band, columns < end."""
    rows, cols = c.device_index()
    keep = ((rows[:, None] - cols[None, :]) >= band) & (cols[None, :] < end)
    c.local[...] = c.xp.where(keep, c.local, c.xp.zeros((), dtype=c.dtype))
