"""sytrd / hetrd: distributed Householder tridiagonalization  Qᴴ C Q = T  (lower storage).

Real symmetric (sytrd) and complex Hermitian (hetrd) alike, with LAPACK's conventions: the
reflectors H = I - tau v vᴴ have complex tau and real beta (larfg), so T is real: d and e are of
C's real dtype (the tridiagonal solve that follows is real), tau of C's dtype.

Blocked as in LAPACK's latrd: the panel of nb columns is reduced one column at a time against
the trailing matrix *as it was at the start of the panel*, the effect of the panel's earlier
reflectors being carried by two tall matrices V, W (C ← C - V Wᴴ - W Vᴴ is applied to the
trailing matrix only once per panel, as a local rank-2nb update with no communication).

Distribution: V, W, the panel and the current column are replicated on every rank (they are
n × nb at most), so forming the column, generating the reflector and the V/W corrections are
local. The only communication per column is ONE Allreduce of the partial products C₂₂ v (length
n - j - 1): this is the latency-bound small collective the project is about. Panels themselves
cost one column-Allreduce + one row-Bcast each.

The per-column work is the single function ``_column_step``. On the GPU the whole column loop
of a panel is instead one native call (sytrd_native.py: the same steps as kernels, the column's
AllReduce issued natively through hpcolls), so no column pays a Python round trip; on one host
rank holding all of C, the same steps as BLAS calls with their arguments prepared once
(sytrd_host.py), without numpy's temporaries. The host
time per column is recorded in the stage notes as ``host_us_per_column``, and which loop ran as
``column_loop``.

Output: d (n), e (n-1), tau (n; tau[n-1] = 0), replicated; the Householder vectors are stored
in the panel columns of C (column j holds v_j in rows j+1:, with its unit leading entry stored
explicitly, and zeros in rows j0..j of its panel) — ormtr reads them from there.
"""
import time

from .backend import host_blas
from .backend.arrays import is_numpy, real_dtype
from .distributed.panels import block_span, replicate_block_col
from .householder import quiet_division, larfg
from .sytrd_host import HostColumnLoop, host_blas_product
from .sytrd_native import NativeColumnLoop


def sytrd(c, coll, native=True, product=None, profile=False, loop="fused"):
    """Tridiagonalize the full symmetric / Hermitian DistMatrix ``c`` in place; returns
    (d, e, tau). ``native=False`` forces the Python column loop (the reference the GPU and host
    loops' tests compare with); ``loop`` picks the native loop, 'fused' where it applies or
    'kernels' (solvers/plan.py's choose_sytrd_loop). For measuring the native loop: ``product``
    forces its local product ('gemv' or 'hemv_lower'), ``profile=True`` notes its GPU time per
    phase as sytrd_phase_ms (sytrd_native.py)."""
    n = c.shape[0]
    xp, nb, dtype = c.xp, c.nb, c.dtype
    real = real_dtype(dtype)
    d = xp.zeros(n, dtype=real)
    e = xp.zeros(max(n - 1, 0), dtype=real)
    tau = xp.zeros(n, dtype=dtype)
    rows, cols = c.device_index()
    column_time = 0.0
    column_loop = _column_loop(c, coll, native, product, profile, loop)
    whole_on_host = c.grid.size == 1 and host_blas_product(c)
    for k in range((n + nb - 1) // nb):
        j0, j1 = block_span(k, nb, n)
        width = j1 - j0
        panel = replicate_block_col(c, k, j0, coll)      # rows j0:n, trailing-at-panel-start
        v_mat = xp.zeros((n - j0, width), dtype=dtype)   # row r ↔ global row j0 + r
        w_mat = xp.zeros((n - j0, width), dtype=dtype)
        start = time.perf_counter()
        if column_loop is not None:
            column_loop.run(panel, v_mat, w_mat, d, e, tau, j0, width)
        else:
            with quiet_division():
                for i in range(width):
                    _column_step(c, panel, v_mat, w_mat, d, e, tau, j0, i, coll)
        column_time += time.perf_counter() - start

        # Keep the reflectors for ormtr in the panel's own columns.
        lr0 = c.first_local_row(j0)
        if c.grid.mycol == c.block_owner_col(k):
            c.local[lr0:, c.local_block_cols(k)] = v_mat[rows[lr0:] - j0]
        # Trailing update C₂₂ -= V Wᴴ + W Vᴴ on local blocks (rows and columns >= j1).
        if whole_on_host:  # lower triangle only: the loop and ormtr read no other
            host_blas.her2k_lower_update(c.local[j1:, j1:], v_mat[j1 - j0:], w_mat[j1 - j0:])
            continue
        lr1, lc1 = c.first_local_row(j1), c.first_local_col(j1)
        rv, rw = v_mat[rows[lr1:] - j0], w_mat[rows[lr1:] - j0]
        cv, cw = v_mat[cols[lc1:] - j0], w_mat[cols[lc1:] - j0]
        c.local[lr1:, lc1:] -= rv @ cw.conj().T + rw @ cv.conj().T
    coll.note("host_us_per_column", 1e6 * column_time / max(n, 1))
    if isinstance(column_loop, NativeColumnLoop):
        column_loop.finish()
        coll.note("launches_per_column", column_loop.launches / max(n, 1))
        if column_loop.phase_ms() is not None:
            coll.note("sytrd_phase_ms", column_loop.phase_ms())
    return d, e, tau


def _column_loop(c, coll, native, product, profile, loop):
    """The loop of a panel's columns, noted as ``column_loop``: on the GPU the native loop
    (``loop``: 'fused' or 'kernels'), on a host rank holding all of C the host BLAS loop
    (sytrd_host.py); None (noted with why) for the Python steps of ``_column_step``."""
    if not native:
        column_loop, why = None, "requested"
    elif is_numpy(c.xp):
        column_loop, why = HostColumnLoop.create(c)
    else:
        column_loop, why = NativeColumnLoop.create(c, coll, product, profile, loop)
    if isinstance(column_loop, HostColumnLoop):
        coll.note("column_loop", "host BLAS, symv / hemv product, no allreduce (one rank)")
    elif column_loop is not None:
        coll.note("column_loop", f"native, {column_loop.product} product, {column_loop.description}, "
                                 f"allreduce {column_loop.allreduce_path}")
    else:
        coll.note("column_loop", f"python ({why})")
    return column_loop


def _column_step(c, panel, v_mat, w_mat, d, e, tau, j0, i, coll):
    """Reduce global column j = j0 + i: one reflector, one Allreduce (LAPACK's latrd / zlatrd,
    lower: the conjugates fall where zlatrd's zlacgv and 'C' gemvs put them).

    panel[r, i] is C[j0 + r, j] at panel start; v_mat / w_mat hold the panel's reflectors so far.
    """
    xp = c.xp
    n = c.shape[0]
    j = j0 + i
    # Column j of the current matrix: panel-start values minus the panel's earlier updates.
    col = panel[i:, i]
    if i:
        col = col - v_mat[i:, :i] @ w_mat[i, :i].conj() - w_mat[i:, :i] @ v_mat[i, :i].conj()
    d[j] = col[0].real
    if j == n - 1:
        return
    v, beta, t = larfg(xp, col[1:])
    e[j] = beta
    tau[j] = t

    # p = C₂₂ v over rows/columns j+1: (C₂₂ as at panel start): local partial products,
    # summed over the whole grid (each rank fills its rows; ranks of a grid row add columns).
    lr, lc = c.first_local_row(j + 1), c.first_local_col(j + 1)
    rows, cols = c.device_index()
    p = xp.zeros(n - j - 1, dtype=c.dtype)
    if c.grid.size == 1 and host_blas_product(c):  # C₂₂ whole here: its lower triangle
        host_blas.hemv_lower(c.local[j + 1:, j + 1:], v, p)
    else:
        p[rows[lr:] - (j + 1)] = c.local[lr:, lc:] @ v[cols[lc:] - (j + 1)]
    coll.allreduce(p, scope="all")

    if i:  # the earlier reflectors of this panel, not yet applied to C₂₂
        vb, wb = v_mat[i + 1:, :i], w_mat[i + 1:, :i]
        p -= vb @ (wb.conj().T @ v) + wb @ (vb.conj().T @ v)
    w = t * p
    w -= (0.5 * t * (w.conj() @ v)) * v
    v_mat[i + 1:, i] = v
    w_mat[i + 1:, i] = w
