"""LAPACK's dstevd and dstemr callable without the GIL and without scipy's workspace choices.

scipy's f2py wrappers hold the GIL for the whole call (two Python threads run one after the
other), and its dstemr wrapper allocates an n × n eigenvector array whatever the range asked.
The same routines are also exported as C function pointers by scipy.linalg.cython_lapack; called
through ctypes, which releases the GIL around foreign calls, they run in parallel, return the
wrapper's bits (same library) and take the Z we size: n × m for m wanted eigenvectors.
"""
import ctypes
import functools

import numpy as np


@functools.cache
def _routine(name, nargs):
    """LAPACK ``name`` from scipy.linalg.cython_lapack as a ctypes function of ``nargs``
    pointers (Fortran passes every argument by reference)."""
    from scipy.linalg import cython_lapack
    capsule = cython_lapack.__pyx_capi__[name]
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))
    return ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * nargs)(address)


def stevd_vectors(d, e):
    """(w ascending, Z) of the tridiagonal with diagonal d (n) and off-diagonal e (n-1),
    float64, by dstevd with jobz='V'; Z is Fortran-ordered (Z.T is C-contiguous)."""
    n = d.shape[0]
    w = np.array(d, dtype=np.float64)
    sub = np.zeros(max(n - 1, 1))                 # LAPACK wants max(n-1, 1) entries
    sub[:n - 1] = e
    z = np.empty((n, n), order="F")
    lwork, liwork = 1 + 4 * n + n * n, 3 + 5 * n  # LAPACK's minimum, as scipy's wrapper asks
    work, iwork = np.empty(lwork), np.empty(liwork, dtype=np.intc)
    jobz = ctypes.c_char(b"V")
    order, ldz, lw, liw, info = (ctypes.c_int(v) for v in (n, max(n, 1), lwork, liwork, 0))
    at = ctypes.addressof
    # dstevd(jobz, n, d, e, z, ldz, work, lwork, iwork, liwork, info)
    _routine("dstevd", 11)(at(jobz), at(order), w.ctypes.data, sub.ctypes.data, z.ctypes.data,
                           at(ldz), work.ctypes.data, at(lw), iwork.ctypes.data, at(liw), at(info))
    if info.value:
        raise RuntimeError(f"stevd did not converge (info={info.value})")
    return w, z


def secular_roots(d, z, rho, first, last):
    """(origin, tau) of roots first..last-1 (0-based) of 1 + ρ Σ zⱼ²/(dⱼ − λ) (d ascending and
    distinct, ρ > 0, k = len(d) ≥ 3) by LAPACK's dlaed4, one call per root: λᵢ = d[origin] + tau
    with origin the pole dlaed4 measured the root from (its nearer one), so that dⱼ − λᵢ =
    (dⱼ − d[origin]) − tau keeps full relative accuracy. dlaed4 keeps δ[origin] = −tau exactly
    (it updates both by the same steps), which is where tau is read. (For k ≤ 2 dlaed4 returns
    eigenvectors in δ instead: callers solve those otherwise.)

    Returns (origin, tau, unconverged): dlaed4 can fail to converge, mostly on the last root
    beside a tight cluster of poles (Reference-LAPACK issue #1166, after the fix of PR #655);
    the 0-based numbers of those roots are listed in ``unconverged`` and their slots left unset
    (origin −1, tau NaN) for the caller to solve otherwise."""
    k = d.shape[0]
    if k < 3:
        raise ValueError("secular_roots needs k >= 3 (dlaed4 answers k <= 2 in closed form)")
    d = np.ascontiguousarray(d, dtype=np.float64)
    z = np.ascontiguousarray(z, dtype=np.float64)
    origin = np.empty(max(last - first, 0), dtype=np.int64)
    tau = np.empty(max(last - first, 0))
    delta = np.empty(k)
    order, index, info = ctypes.c_int(k), ctypes.c_int(0), ctypes.c_int(0)
    c_rho, lam = ctypes.c_double(rho), ctypes.c_double(0.0)
    at = ctypes.addressof
    routine = _routine("dlaed4", 8)
    unconverged = []
    for slot, i in enumerate(range(first, last)):
        index.value = i + 1
        # dlaed4(n, i, d, z, delta, rho, dlam, info)
        routine(at(order), at(index), d.ctypes.data, z.ctypes.data, delta.ctypes.data,
                at(c_rho), at(lam), at(info))
        if info.value:
            unconverged.append(i)
            origin[slot], tau[slot] = -1, np.nan
            continue
        near = i if i == k - 1 or abs(delta[i]) <= abs(delta[i + 1]) else i + 1
        origin[slot], tau[slot] = near, -delta[near]
    return origin, tau, unconverged


def stemr_vectors(d, e, il, iu):
    """(w, Z) of eigenpairs il..iu (1-based, ascending, LAPACK's range 'I') of the tridiagonal
    with diagonal d (n) and off-diagonal e (n-1), float64, by dstemr (MRRR) with jobz='V';
    Z is n × (iu-il+1), Fortran-ordered: only the wanted vectors are ever stored."""
    n = d.shape[0]
    m_want = iu - il + 1
    w_d = np.array(d, dtype=np.float64)
    sub = np.zeros(max(n, 1))                     # dstemr wants n entries (the last is workspace)
    sub[:n - 1] = e
    w = np.empty(max(n, 1))
    z = np.empty((max(n, 1), max(m_want, 1)), order="F")
    isuppz = np.empty(2 * max(m_want, 1), dtype=np.intc)
    lwork, liwork = max(18 * n, 1), max(10 * n, 1)    # LAPACK's minimum for jobz='V'
    work, iwork = np.empty(lwork), np.empty(liwork, dtype=np.intc)
    jobz, rng = ctypes.c_char(b"V"), ctypes.c_char(b"I")
    vl, vu = ctypes.c_double(0.0), ctypes.c_double(0.0)
    ints = [ctypes.c_int(v) for v in (n, il, iu, 0, max(n, 1), max(m_want, 1), 1, lwork, liwork, 0)]
    order, c_il, c_iu, m, ldz, nzc, tryrac, lw, liw, info = ints
    at = ctypes.addressof
    # dstemr(jobz, range, n, d, e, vl, vu, il, iu, m, w, z, ldz, nzc, isuppz, tryrac,
    #        work, lwork, iwork, liwork, info)
    _routine("dstemr", 21)(at(jobz), at(rng), at(order), w_d.ctypes.data, sub.ctypes.data,
                           at(vl), at(vu), at(c_il), at(c_iu), at(m), w.ctypes.data,
                           z.ctypes.data, at(ldz), at(nzc), isuppz.ctypes.data, at(tryrac),
                           work.ctypes.data, at(lw), iwork.ctypes.data, at(liw), at(info))
    if info.value:
        raise RuntimeError(f"stemr failed (info={info.value})")
    if m.value != m_want:
        raise RuntimeError(f"stemr found {m.value} eigenvalues in {il}..{iu}, not {m_want}")
    return w[:m_want], z[:n, :m_want]


class MrrrRoot:
    """What LAPACK's dlarre computes for the eigenpairs il..iu of a tridiagonal: the split
    points, a root representation L D Lᵀ (shifted by σ) of every block, and eigenvalue
    approximations with error bounds, in *storage order* (block by block, ascending in each).

    It is what dstemr computes before its vectors, split out so that several processes holding
    the same root (computed from the same input, hence the same bits) can each compute a slice
    of the vectors with dlarrv's DOL..DOU: their vectors then come from one representation tree
    and are as orthogonal as one dstemr call's, whichever eigenvalues each process took. Vectors
    of separate dstemr calls are not: each chooses its own root for its own subset, and across
    the calls orthogonality is only ε‖T‖ / gap (ScaLAPACK's pdsyevr shares the root in the same
    way; Vömel, ACM TOMS 37(1), 2010)."""

    def __init__(self, d, e, il, iu):
        n = d.shape[0]
        if n < 3:
            raise ValueError("MrrrRoot needs n >= 3 (dstemr solves n <= 2 in closed form)")
        self.n = n
        tiny, eps = np.finfo(np.float64).tiny, np.finfo(np.float64).eps
        small = tiny / eps
        rmin, rmax = np.sqrt(small), min(np.sqrt(1 / small), 1 / np.sqrt(np.sqrt(tiny)))
        self.d = np.array(d, dtype=np.float64)
        self.e = np.zeros(n)                   # n entries: dlarre stores the shifts σ in it
        self.e[:n - 1] = e
        norm = float(max(np.abs(self.d).max(), np.abs(self.e).max()))
        # Scaled into the range where the pivots are safe, as dstemr does; vectors do not change.
        self.scale = rmin / norm if 0 < norm < rmin else (rmax / norm if norm > rmax else 1.0)
        self.d *= self.scale
        self.e *= self.scale
        relative = ctypes.c_int(0)
        at = ctypes.addressof
        order = ctypes.c_int(n)
        _routine("dlarrr", 4)(at(order), self.d.ctypes.data, self.e.ctypes.data, at(relative))
        # Tolerances of dstemr with jobz='V': bisection need not be sharp, dlarrv refines.
        self.rtol1 = ctypes.c_double(np.sqrt(eps))
        self.rtol2 = ctypes.c_double(max(np.sqrt(eps) * 5e-3, 4 * eps))
        split_tol = ctypes.c_double(eps if relative.value == 0 else -eps)
        e2 = self.e[:n] ** 2
        self.wl, self.wu = ctypes.c_double(0.0), ctypes.c_double(0.0)
        self.isplit = np.zeros(n, dtype=np.intc)
        self.w, self.werr, self.wgap = np.zeros(n), np.zeros(n), np.zeros(n)
        self.iblock, self.indexw = np.zeros(n, dtype=np.intc), np.zeros(n, dtype=np.intc)
        self.gers = np.zeros(2 * n)
        self.pivmin = ctypes.c_double(0.0)
        nsplit, m, info = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
        c_il, c_iu, rng = ctypes.c_int(il), ctypes.c_int(iu), ctypes.c_char(b"I")
        work, iwork = np.zeros(6 * n), np.zeros(5 * n, dtype=np.intc)
        # dlarre(range, n, vl, vu, il, iu, d, e, e2, rtol1, rtol2, spltol, nsplit, isplit, m,
        #        w, werr, wgap, iblock, indexw, gers, pivmin, work, iwork, info)
        _routine("dlarre", 25)(at(rng), at(order), at(self.wl), at(self.wu), at(c_il), at(c_iu),
                               self.d.ctypes.data, self.e.ctypes.data, e2.ctypes.data,
                               at(self.rtol1), at(self.rtol2), at(split_tol), at(nsplit),
                               self.isplit.ctypes.data, at(m), self.w.ctypes.data,
                               self.werr.ctypes.data, self.wgap.ctypes.data,
                               self.iblock.ctypes.data, self.indexw.ctypes.data,
                               self.gers.ctypes.data, at(self.pivmin), work.ctypes.data,
                               iwork.ctypes.data, at(info))
        if info.value:
            raise RuntimeError(f"dlarre failed (info={info.value})")
        if m.value != iu - il + 1:
            raise RuntimeError(f"dlarre found {m.value} eigenvalues in {il}..{iu}, not {iu - il + 1}")
        self.m = m.value

    def vectors(self, dol, dou):
        """(w, Z) of the eigenpairs at storage positions dol..dou (1-based, inclusive) of the
        root: w refined by dlarrv (unshifted, unscaled), Z n × (dou-dol+1), Fortran-ordered."""
        n, m, dol, dou = self.n, self.m, int(dol), int(dou)
        count = dou - dol + 1
        if count <= 0:
            return np.empty(0), np.empty((n, 0), order="F")
        # dlarrv reads and writes columns max(dol-1, 1)..min(dou+1, m) of an n × m Z and no
        # other: only those are allocated, Z's base address placed so that they land here.
        first, last = max(dol - 1, 1), min(dou + 1, m)
        z = np.zeros((n, last - first + 1), order="F")
        base = int(z.ctypes.data) - (first - 1) * n * z.itemsize
        d, e = self.d.copy(), self.e.copy()            # dlarrv overwrites the representation
        w, werr, wgap = self.w.copy(), self.werr.copy(), self.wgap.copy()
        isuppz = np.zeros(2 * m, dtype=np.intc)
        work, iwork = np.zeros(12 * n), np.zeros(7 * n, dtype=np.intc)
        ints = [ctypes.c_int(v) for v in (n, m, dol, dou, n, 0)]
        order, c_m, c_dol, c_dou, ldz, info = ints
        minrgp = ctypes.c_double(1e-3)
        at = ctypes.addressof
        # dlarrv(n, vl, vu, d, l, pivmin, isplit, m, dol, dou, minrgp, rtol1, rtol2, w, werr,
        #        wgap, iblock, indexw, gers, z, ldz, isuppz, work, iwork, info)
        _routine("dlarrv", 25)(at(order), at(self.wl), at(self.wu), d.ctypes.data, e.ctypes.data,
                               at(self.pivmin), self.isplit.ctypes.data, at(c_m), at(c_dol),
                               at(c_dou), at(minrgp), at(self.rtol1), at(self.rtol2),
                               w.ctypes.data, werr.ctypes.data, wgap.ctypes.data,
                               self.iblock.ctypes.data, self.indexw.ctypes.data,
                               self.gers.ctypes.data, base, at(ldz),
                               isuppz.ctypes.data, work.ctypes.data, iwork.ctypes.data, at(info))
        if info.value:
            raise RuntimeError(f"dlarrv failed (info={info.value})")
        return w[dol - 1:dou] / self.scale, z[:, dol - first:dol - first + count]


def stein_vectors(d, e, il, iu):
    """(w, Z) of eigenpairs il..iu (1-based, ascending) of the tridiagonal (d, e) by bisection
    and inverse iteration (dstebz + dstein: what dsyevr falls back to when MRRR fails). dstein
    reorthogonalizes the vectors of eigenvalues closer than 10⁻³ ‖T‖₁ within this call only, so
    callers cut the wanted set only at gaps wider than that. Z is n × (iu-il+1)."""
    n = d.shape[0]
    if iu < il:
        return np.empty(0), np.empty((n, 0), order="F")
    m, w, iblock, isplit, info = scipy_lapack().dstebz(d, e, 2, 0.0, 0.0, il, iu, 0.0, b"B")
    if info or m != iu - il + 1:
        raise RuntimeError(f"dstebz found {m} of eigenvalues {il}..{iu} (info={info})")
    z, info = scipy_lapack().dstein(d, e, w[:m], iblock, isplit)
    if info:
        raise RuntimeError(f"dstein: {info} of eigenvectors {il}..{iu} did not converge")
    ascending = np.argsort(w[:m], kind="stable")      # dstebz's order 'B' is block by block
    return w[:m][ascending], np.asfortranarray(z[:n, :m][:, ascending])


def scipy_lapack():
    import scipy.linalg.lapack
    return scipy.linalg.lapack
