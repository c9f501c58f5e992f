"""sb2st / hb2st: band → tridiagonal by bulge chasing, the second stage of the two-stage
tridiagonalization (LAPACK's dsytrd_sb2st / zhetrd_hb2st; Lang's SBR one column at a time, in
the task form of Haidar, Ltaief and Dongarra, SC'11).

The Hermitian band B (bandwidth b, lower storage) becomes T = Gᴴ B G, real symmetric
tridiagonal, G a product of Householder reflectors H = I - τ v vᴴ (larfg's conventions: Hᴴ x = β e₁,
β real). Sweep s (s = 0 … n-2) annihilates column s below its subdiagonal, then chases the
bulge that this creates down the band, b rows per step. With R_k = rows s+1+kb : s+1+(k+1)b:

    step 0:  H₀ from B[R₀, s];  B[R₀, s] ← β e₁;  B[R₀, R₀] ← H₀ᴴ B[R₀, R₀] H₀
    step k:  D = B[R_k, R_{k-1}] ← D H_{k-1}         (fills D below the band: the bulge)
             H_k from D[:, 0];  D ← H_kᴴ D             (column 0 back inside the band)
             B[R_k, R_k] ← H_kᴴ B[R_k, R_k] H_k

Every reflector is kept (v, τ) for the back-transformation Q2 = G (ormtr_sb2st.py). The fill
never reaches more than 2b-1 below the diagonal, so the work array holds 2b subdiagonals.
Step k of sweep s touches rows R_k(s) only; step k' of sweep s-1 touches rows R_{k'}(s-1), which
meet them for k' ∈ {k, k+1} alone, and R_{k+1}(s-1) in one row (the last of R_k(s)): so sweep s
may run step k as soon as sweep s-1 has finished its steps 0 … k, reading that row once sweep s-1
has finished step k+1 too, and sweeps run in a pipeline, each two steps behind the one before, with
the sequential order's results bit for bit whatever the number of workers.

Where it runs: the native implementation in solvers._kernels (native/solvers/sb2st*.cu: one step
function for host and device; on the host a thread per sweep in flight, on the GPU one thread
block per sweep in flight, both pipelined by a progress counter per sweep); without it, the
Python steps below (the reference the native ones are tested against). The band is small (n ×
2b), so every rank chases the same band itself: the same bits everywhere, and each rank then
holds every reflector for its own columns of the back-transformation.

The reflectors are stored as the back-transformation uses them (BulgeLayout): in groups of g
consecutive sweeps at the same step k, each group an (b+g-1) × g parallelogram V of one block
reflector, the groups that ormtr_sb2st applies together (one "slot") stored contiguously.
"""
from dataclasses import dataclass

import numpy as np

from . import sb2st_native
from .backend.arrays import real_dtype, to_host
from .householder import larfg, quiet_division


@dataclass(frozen=True)
class BulgeLayout:
    """Where sb2st stores its reflectors and in which order ormtr_sb2st applies them.

    Group (σ, k) holds the step-k reflectors of sweeps σg … σg+g-1: an h × g matrix
    (h = b + g - 1) whose column j is v of sweep σg+j in rows j … j+b-1 (zeros elsewhere),
    acting on rows σg+1+kb … of the matrix. Group (σ, k) goes to slot τ = (nσ-1-σ) + k: the
    groups of a slot act on disjoint rows, evenly spaced (g + b rows apart, σ ascending), and
    applying the slots in increasing τ respects every order the product G imposes (ormtr_sb2st.py).
    ``index[σ, k]`` is the group's position in storage (-1: none), slot-major."""
    n: int
    band: int
    group: int
    index: np.ndarray        # (nσ, kmax) int64
    slot_start: np.ndarray   # (slots + 1,) storage offsets of each slot's groups
    slot_row: np.ndarray     # (slots,) first row on which the slot's first group acts

    @classmethod
    def create(cls, n, band, group):
        if band < 1 or group < 1:
            raise ValueError(f"sb2st: bandwidth {band} and group {group} must be positive")
        sweeps = max(n - 1, 0)
        nsig = -(-sweeps // group)
        kmax = steps(n, band, 0) if sweeps else 0
        sig, k = np.meshgrid(np.arange(nsig), np.arange(kmax), indexing="ij")
        exists = k < steps(n, band, sig * group)
        slot = (nsig - 1 - sig) + k
        order = np.lexsort((sig[exists], slot[exists]))          # by slot, then σ
        index = np.full((nsig, kmax), -1, dtype=np.int64)
        flat = np.flatnonzero(exists.ravel())[order]
        index.ravel()[flat] = np.arange(flat.size)
        slots = nsig + kmax - 1 if nsig else 0
        counts = np.bincount(slot[exists], minlength=slots)[:slots]
        slot_start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        first = flat[slot_start[:-1][counts > 0]] if slots else np.zeros(0, dtype=np.int64)
        slot_row = np.zeros(slots, dtype=np.int64)
        slot_row[counts > 0] = (first // max(kmax, 1)) * group + 1 + (first % max(kmax, 1)) * band
        return cls(n, band, group, index, slot_start, slot_row)

    @property
    def height(self):
        return self.band + self.group - 1

    @property
    def groups(self):
        return int(self.slot_start[-1]) if self.slot_start.size else 0

    @property
    def slots(self):
        return self.slot_row.shape[0]


def steps(n, band, sweep):
    """Steps of sweep ``sweep`` (its reflectors): one per b rows from row sweep+1 to n-1."""
    return (n - 2 - np.asarray(sweep)) // band + 1


@dataclass
class BulgeReflectors:
    """sb2st's reflectors, on the backend of the run: v (groups, h, g), tau (groups, g)."""
    layout: BulgeLayout
    v: object
    tau: object


def default_group(band):
    """Sweeps per block reflector of the back-transformation: as many as the bandwidth (the
    parallelogram V is then (2b-1) × b; smaller groups waste fewer flops on its zero
    triangles, larger ones make larger GEMMs)."""
    return band


def sb2st(ab, band, coll, vectors, group=None, native=True, chase_threads=None):
    """Tridiagonalize the Hermitian band ``ab`` (n × (b+1), ab[j, d] = B[j+d, j], the same on
    every rank; an array of the run's backend). Returns (d, e, reflectors): d (n) and e (n-1)
    real, on the backend; reflectors a BulgeReflectors when ``vectors``, else None.
    ``native=False`` runs the Python steps (the reference); ``chase_threads``: the GPU chase's
    threads per block (default sb2st_native.THREADS_PER_BLOCK)."""
    xp = coll.xp
    n = ab.shape[0]
    dtype = ab.dtype
    layout = BulgeLayout.create(n, band, group or default_group(band))
    work = xp.zeros((n, 2 * band), dtype=dtype)
    work[:, :band + 1] = ab
    # A Hermitian diagonal is real: its imaginary part is never read (the chase takes the real
    # part as it gathers), and zeroed here from ab, not from a view of work into work itself.
    work[:, 0] = ab[:, 0].real
    v = tau = None
    if vectors:
        v = xp.zeros((layout.groups, layout.height, layout.group), dtype=dtype)
        tau = xp.zeros((layout.groups, layout.group), dtype=dtype)
    chased, how = (sb2st_native.chase(work, layout, v, tau, coll, chase_threads) if native
                   else (False, "python (requested)"))
    if not chased:
        host = [None if x is None else to_host(x).copy() for x in (work, v, tau)]
        with quiet_division():
            _chase_python(host[0], layout, host[1], host[2])
        work, v, tau = (None if x is None else xp.asarray(x) for x in host)
    coll.note("chase", how)
    coll.note("group", layout.group)
    real = real_dtype(dtype)
    d = xp.ascontiguousarray(work[:, 0].real, dtype=real)
    e = xp.ascontiguousarray(work[:n - 1, 1].real, dtype=real) if n > 1 else xp.zeros(0, dtype=real)
    return d, e, (BulgeReflectors(layout, v, tau) if vectors else None)


# ---- the Python steps (the reference of the native ones) -----------------------------------

def _chase_python(work, layout, v2, tau2):
    n, b, g = layout.n, layout.band, layout.group
    for s in range(n - 1):
        v = tau = None
        for k in range(int(steps(n, b, s))):
            r0 = s + 1 + k * b
            rows = min(b, n - r0)
            if k == 0:
                v, beta, tau = larfg(np, work[s, 1:rows + 1].copy())
                work[s, 1:rows + 1] = 0
                work[s, 1] = beta
            else:
                d = _block(work, r0, r0 - b, rows, b)
                d -= tau * np.outer(d @ v, v.conj())                 # D H_{k-1}
                v, beta, tau = larfg(np, d[:, 0].copy())
                d[:, 1:] -= np.conj(tau) * np.outer(v, v.conj() @ d[:, 1:])   # H_kᴴ D
                d[:, 0] = 0
                d[0, 0] = beta
                _put_block(work, r0, r0 - b, d)
            a = _hermitian_block(work, r0, rows)
            w = tau * (a @ v)
            w -= (0.5 * tau * (w.conj() @ v)) * v
            a -= np.outer(v, w.conj()) + np.outer(w, v.conj())      # H_kᴴ A H_k
            _put_lower(work, r0, a)
            if v2 is not None:
                at, j = layout.index[s // g, k], s % g
                v2[at, j:j + rows, j] = v
                tau2[at, j] = tau


def _block(work, r0, c0, nrows, ncols):
    """B[r0:r0+nrows, c0:c0+ncols] from the band storage (every entry at or below the diagonal)."""
    i, j = np.arange(nrows)[:, None], np.arange(ncols)[None, :]
    return work[c0 + j, r0 - c0 + i - j].copy()


def _put_block(work, r0, c0, block):
    i, j = np.arange(block.shape[0])[:, None], np.arange(block.shape[1])[None, :]
    work[c0 + j, r0 - c0 + i - j] = block


def _hermitian_block(work, r0, size):
    """The Hermitian B[r0:r0+size, r0:r0+size] from its lower triangle (diagonal taken real)."""
    i, j = np.arange(size)[:, None], np.arange(size)[None, :]
    low = work[r0 + np.minimum(i, j), np.abs(i - j)]
    a = np.where(i >= j, low, low.conj())
    a[np.diag_indices(size)] = a.diagonal().real
    return a


def _put_lower(work, r0, a):
    i, j = np.tril_indices(a.shape[0])
    work[r0 + j, i - j] = a[i, j]
    work[r0:r0 + a.shape[0], 0] = work[r0:r0 + a.shape[0], 0].real


def flops(n, band):
    """Approximate flops of the chase (real arithmetic): per reflector of length b, ~6b² for the
    two-sided diagonal block and ~8b² for the bulge block."""
    return 14.0 * band * band * n * n / (2 * band) if band else 0.0
