"""The sytrd / hetrd column loop on a host rank that holds all of C: BLAS calls of numpy's own
OpenBLAS, their arguments prepared once.

The reference loop (sytrd.py's ``_column_step``) spends some 150 µs of Python per column on
numpy temporaries, a larfg of a dozen 0-d array operations and ctypes arguments wrapped anew per
call: as long as the column's symv itself at n = 2048 (docs/PERFORMANCE.md#solver-cpu-vs-scipy).
This loop makes the same steps (LAPACK's latrd / zlatrd, lower; the conventions written out in
sytrd_native.py) with about fifteen calls per column: the products are BLAS gemv / symv / hemv
on the arrays as they lie (row-major V, W, the panel and C read as their column-major
transposes, strided columns by their increments), into buffers made once; larfg's arithmetic
is on Python scalars (``householder.larfg_scalars``). The column's Allreduce is over one rank:
nothing to send, so there is none.

Complex data are handled in conjugated form, so that no hemv result needs conjugating back: C is
stored row-major, so what BLAS sees is Cᵀ = conj(C), whose hemv gives conj(C) conj(v) = conj(C v).
The loop therefore carries p̄ = conj(p) and w̄ = conj(w), forms V̄ (Wᴴ v)‾ and the like with
gemv's 'N' and 'C' ops, and stores w = conj(w̄) in W at the end. For real data every conj is the
identity and the same calls read the same buffers.
"""
import numpy as np

from .backend import host_blas
from .backend.arrays import is_numpy
from .householder import larfg_scalars


def host_blas_product(c):
    """Whether C₂₂ v on a host rank holding all of C is one symv / hemv of numpy's BLAS (half of
    C₂₂ read, where a product with all of it reads it whole): numpy arrays of a BLAS dtype, rows
    contiguous, numpy's BLAS found."""
    return is_numpy(c.xp) and host_blas.available() and c.dtype.char in "fdFD" and c.local.flags.c_contiguous


class HostColumnLoop:
    """Runs sytrd's column steps of one panel on one host rank holding the whole of C."""

    @classmethod
    def create(cls, c):
        """(loop, None) for DistMatrix ``c`` when the loop applies, else (None, why not)."""
        if c.grid.size != 1:
            return None, "the whole matrix is not on one rank"
        if not host_blas_product(c):
            return None, "numpy's BLAS not found, or a dtype / layout it does not take"
        return cls(c), None

    def __init__(self, c):
        self._c = c
        dtype = c.dtype
        n = c.shape[0]
        self._complex = dtype.kind == "c"
        self._gemv = host_blas.routine("gemv", dtype)
        self._hemv = host_blas.routine("hemv" if self._complex else "symv", dtype)
        self._nrm2 = host_blas.routine("nrm2", dtype)
        self._axpy = host_blas.routine("axpy", dtype)
        # Work vectors: v, conj(v) (v itself for real data), p̄, w̄, two small ones of the panel.
        self._v = np.empty(max(n, 1), dtype)
        self._vc = np.empty(max(n, 1), dtype) if self._complex else self._v
        self._p = np.empty(max(n, 1), dtype)
        self._w = np.empty(max(n, 1), dtype)
        self._small = np.empty((2, max(c.nb, 1)), dtype)
        # By-reference arguments: constants made once, the two varying sizes updated per call.
        self._keep = []   # what the addresses below point into
        self._m, self._k = host_blas.integer(), host_blas.integer()
        self._coef = np.zeros((), dtype)
        at = self._at
        self.args = {
            "N": at(np.array(b"N")), "T": at(np.array(b"T")), "C": at(np.array(b"C")), "U": at(np.array(b"U")),
            "one": at(np.ones((), dtype)), "zero": at(np.zeros((), dtype)), "minus_one": at(np.full((), -1, dtype)),
            "inc1": at(host_blas.integer(1)), "m": at(self._m), "k": at(self._k), "coef": at(self._coef),
            "ldc": at(host_blas.integer(c.local.shape[1])),
        }
        self._isz = dtype.itemsize
        self._c_base = c.local.ctypes.data
        self._c_diagonal_step = (c.local.shape[1] + 1) * dtype.itemsize   # C[j, j] to C[j+1, j+1]

    def _at(self, obj):
        self._keep.append(obj)
        return host_blas.address(obj)

    def run(self, panel, v_mat, w_mat, d, e, tau, j0, width):
        """Reduce columns j0 .. j0 + width - 1; panel, v_mat and w_mat as in sytrd.py (row-major,
        row r ↔ global row j0 + r, ``width`` columns each)."""
        n, isz, a = self._c.shape[0], self._isz, self.args
        ld = host_blas.integer(width)
        lda = host_blas.address(ld)
        bp, bv, bw = panel.ctypes.data, v_mat.ctypes.data, w_mat.ctypes.data
        pv, pvc, pp, pw = self._v.ctypes.data, self._vc.ctypes.data, self._p.ctypes.data, self._w.ctypes.data
        ps0, ps1 = self._small[0].ctypes.data, self._small[1].ctypes.data
        gemv, hemv, nrm2, axpy = self._gemv, self._hemv, self._nrm2, self._axpy
        conj_op = a["C"] if self._complex else a["T"]
        for i in range(width):
            j = j0 + i
            m = n - j - 1                       # the reflector's length
            col = bp + (i * width + i) * isz    # panel[i, i]: the column, rows j.., stride width
            # The column as the panel's earlier reflectors left it: col -= V conj(W[i]) + W conj(V[i]),
            # rows i.. of V, W read as their transposes (i × (m + 1), leading dimension width).
            if i:
                self._m.value, self._k.value = i, m + 1
                np.conjugate(w_mat[i, :i], out=self._small[0, :i])
                np.conjugate(v_mat[i, :i], out=self._small[1, :i])
                gemv(a["T"], a["m"], a["k"], a["minus_one"], bv + i * width * isz, lda, ps0, a["inc1"],
                     a["one"], col, lda)
                gemv(a["T"], a["m"], a["k"], a["minus_one"], bw + i * width * isz, lda, ps1, a["inc1"],
                     a["one"], col, lda)
            d[j] = panel[i, i].real
            if m == 0:
                return
            # The reflector of the column's rows j+1..: v = (1, x[1:] / (x₀ - β)).
            self._m.value = m - 1
            xnorm = nrm2(a["m"], col + 2 * width * isz, lda)
            beta, t, scale = larfg_scalars(panel[i + 1, i].item(), xnorm)
            v = self._v[:m]
            v[0] = 1
            np.multiply(panel[i + 2:, i], scale, out=v[1:])
            e[j], tau[j] = beta, t
            if self._complex:
                np.conjugate(v, out=self._vc[:m])
            # p̄ = conj(C₂₂ v): C₂₂'s lower triangle is the upper one of the stored Cᵀ.
            self._m.value = m
            hemv(a["U"], a["m"], a["one"], self._c_base + (j + 1) * self._c_diagonal_step, a["ldc"],
                 pvc, a["inc1"], a["zero"], pp, a["inc1"])
            if i:   # p̄ -= conj(V (Wᴴ v) + W (Vᴴ v)), rows i+1.. of V, W
                self._k.value = i
                rv, rw = bv + (i + 1) * width * isz, bw + (i + 1) * width * isz
                gemv(a["N"], a["k"], a["m"], a["one"], rw, lda, pvc, a["inc1"], a["zero"], ps0, a["inc1"])
                gemv(a["N"], a["k"], a["m"], a["one"], rv, lda, pvc, a["inc1"], a["zero"], ps1, a["inc1"])
                gemv(conj_op, a["k"], a["m"], a["minus_one"], rv, lda, ps0, a["inc1"], a["one"], pp, a["inc1"])
                gemv(conj_op, a["k"], a["m"], a["minus_one"], rw, lda, ps1, a["inc1"], a["one"], pp, a["inc1"])
            # w = τ p − (τ (wᴴ v) / 2) v, as w̄ = τ̄ p̄ − conj(τ (wᴴ v) / 2) v̄, with wᴴ v = Σ w̄ v.
            w = self._w[:m]
            np.multiply(self._p[:m], t.conjugate(), out=w)
            self._coef[()] = -(0.5 * t * np.dot(w, v)).conjugate()
            axpy(a["m"], a["coef"], pvc, a["inc1"], pw, a["inc1"])
            v_mat[i + 1:, i] = v
            np.conjugate(w, out=w_mat[i + 1:, i])
