"""The sytrd / hetrd column loop on the GPU: one native call per panel (solvers._kernels.sytrd_panel).

The Python loop in sytrd.py issues a dozen cupy operations and one AllReduce per column, about a
millisecond of host time each (docs/ARCHITECTURE.md, "Targets and floors": latency-critical
loops must not pay a Python round trip per column). The native loop launches the same steps
as kernels from C++ (native/solvers, the solver's own extension module) and, when the solver's
collectives are hpcolls with its native path on, issues the column's AllReduce through hpcolls'
C entry (hpcolls.c_api: a capsule, no hpcolls class); with NCCL or MPI transports it calls back
into Python for that one collective (counted by Collectives as usual). With one rank there is no collective at all.

Types: float32, float64, complex64, complex128. For complex matrices the loop is LAPACK's zlatrd
(lower) with zlarfg's reflectors, the conventions of the Python reference loop:
  H = I - tau v vᴴ, v[0] = 1, Hᴴ x = beta e₁ with beta real and of the sign opposite to Re(x[0]),
  tau = (beta - x[0]) / beta (complex), H = I (tau = 0) only when x[1:] = 0 and x[0] is real;
  the column is C[:, j] - V conj(W[j, :]) - W conj(V[j, :]); w = tau (C₂₂ v - V (Wᴴ v) - W (Vᴴ v)),
  then w -= (tau (wᴴ v) / 2) v;  d = Re(diagonal) and e = beta are real arrays (zhetrd's D, E),
  tau is complex; the caller's trailing update is C₂₂ -= V Wᴴ + W Vᴴ.

The local product C₂₂ v is a hemv (a symv for real types) reading only the lower triangle when
one rank holds the whole matrix (half the HBM traffic of the gemv over both triangles that any
other grid uses); it ignores the imaginary parts of the diagonal, as zhemv does.
Options, for measuring (sytrd passes them down): ``product='gemv'`` forces the gemv on one rank
too; ``profile=True`` times each phase of the column step on the GPU (CUDA events, read once per
panel; the fused loop: its block 0's clock) and sytrd notes the totals as ``sytrd_phase_ms``.

Two native loops compute the same bits (docs/SOLVER.md, "The fused column loop"):
``kernels``, each step its own launch with the AllReduce a host call between them (about eight
launches per column), and ``fused``, a panel's columns in one cooperative launch whose kernel
all-reduces each column itself through hpcolls' device API (hpcolls.Communicator.device_comm's
struct, through the C entry). ``loop='fused'`` (the plan's default over several ranks) runs it
where it applies: over several ranks, on hpcolls' native path, with the device API and the
largest column message inside its scratch, on every rank (agreed: the loops issue different
collectives); otherwise the kernel loop runs and ``column_loop`` says why. The fused loop has not
yet run on a GPU.
"""
import numpy as np

from .backend.arrays import is_numpy
from .kernels import kernels
from .plan import sytrd_product


class NativeColumnLoop:
    """Runs sytrd's column steps of one panel in a single native call."""

    @classmethod
    def create(cls, c, coll, product=None, profile=False, loop="fused"):
        """(loop, None) for DistMatrix ``c`` on the GPU, or (None, why the Python loop runs).
        ``product``: the local product C₂₂ v (one of solvers._kernels.SYTRD_PRODUCTS; default
        hemv_lower on one rank, gemv otherwise); ``profile``: time each phase (phase_ms);
        ``loop``: 'fused' where it applies, or 'kernels' (solvers/plan.py's SYTRD_LOOPS)."""
        if is_numpy(c.xp):
            return None, "numpy backend"
        native, why = kernels()
        if native is None:
            return None, why
        if c.dtype.name not in native.DTYPES:
            return None, f"dtype {c.dtype} (native loop: {', '.join(native.DTYPES)})"
        if c.nb > native.SYTRD_MAX_WIDTH:
            return None, f"nb {c.nb} > {native.SYTRD_MAX_WIDTH}"
        if not c.local.flags.c_contiguous:
            return None, "local array not C-contiguous"
        return cls(c, coll, native, product, profile, loop), None

    def __init__(self, c, coll, native, product=None, profile=False, loop="fused"):
        xp = c.xp
        self._native, self._coll, self._c = native, coll, c
        self._code = native.DTYPES[c.dtype.name]
        self._real = np.finfo(c.dtype).dtype   # d and e: real, as zhetrd's D and E
        n = c.shape[0]
        self._p = xp.empty(max(n, 1), dtype=c.dtype)
        self._rows_host = np.ascontiguousarray(c.rows, dtype=np.int64)
        self._cols_host = np.ascontiguousarray(c.cols, dtype=np.int64)
        self._rows_dev, self._cols_dev = c.device_index()
        self._device = xp.cuda.Device().id
        self._nranks = coll.scope_size("all")
        self._comm = coll.native_allreduce_handle("all", self._device) if self._nranks > 1 else None
        self.allreduce_path = ("none (one rank)" if self._nranks == 1 else
                               "hpcolls native (C entry)" if self._comm is not None else f"{coll.kind} via callback")
        self.product = self._choose_product(native, self._nranks, product)
        self._product_code = native.SYTRD_PRODUCTS.index(self.product)
        self._work = xp.empty(native.sytrd_work_bytes(n, c.nb, self._code, self._product_code), dtype=np.uint8)
        self._phase_ms = np.zeros(len(native.SYTRD_PHASES)) if profile else None
        self.launches = 0   # what the loop enqueued (kernels, memsets, collectives) so far
        self._fused_blocks, why_not = self._choose_fused(loop)
        self.kind = "fused" if self._fused_blocks else "kernels"
        if self._fused_blocks:
            self.allreduce_path = "hpcolls native (C entry), inside the kernel through its device API"
            self.description = f"fused loop (one launch per panel, {self._fused_blocks} blocks)"
        else:
            self.description = "kernel loop" + (f" (fused loop off: {why_not})" if loop == "fused" else "")

    def _choose_fused(self, loop):
        """(blocks of the fused loop's grid, None), or (0, why the kernel loop runs); the same on
        every rank."""
        if loop == "kernels":
            return 0, "requested"
        if loop != "fused":
            raise ValueError(f"sytrd: loop={loop!r}: expected 'fused' or 'kernels'")
        if self._nranks == 1:
            return 0, "one rank: no column collective to fuse"
        if self._comm is None:
            return 0, f"collectives {self._coll.kind} without hpcolls' native path, which the fused loop needs"
        if self.product != "gemv":
            return 0, f"{self.product} product (the fused loop computes the gemv)"
        c, coll = self._c, self._coll
        from mpi4py import MPI   # here: its import initializes MPI (solvers/__init__.py)
        gpu = (MPI.Get_processor_name(), c.xp.cuda.Device(self._device).pci_bus_id)   # ranks sharing it size the grid
        gpus = coll.allgather_obj(gpu)
        try:   # a failure here is this rank's refusal, agreed below, so that no rank is left waiting
            blocks, why = self._native.sytrd_fused_plan(
                comm=self._comm, device=self._device, nranks=self._nranks, n=c.shape[0], width=c.nb,
                dtype=self._code, ranks_on_gpu=max(gpus.count(g) for g in gpus))
        except RuntimeError as exc:
            blocks, why = 0, f"{type(exc).__name__}: {exc}"
        refusals = [f"rank {rank}: {reason}" for rank, reason in enumerate(coll.allgather_obj(why)) if reason]
        return (0, "; ".join(refusals)) if refusals else (blocks, None)

    @staticmethod
    def _choose_product(native, nranks, forced):
        if forced is not None and forced not in native.SYTRD_PRODUCTS:
            raise ValueError(f"sytrd: product={forced!r}: expected one of {', '.join(native.SYTRD_PRODUCTS)}")
        if forced == "hemv_lower" and nranks > 1:
            raise ValueError("sytrd: product='hemv_lower' needs one rank (the whole matrix on it)")
        return forced or sytrd_product(nranks)

    def phase_ms(self):
        """{phase: GPU milliseconds} over the panels so far, or None when not profiling."""
        if self._phase_ms is None:
            return None
        return {name: round(float(ms), 3) for name, ms in zip(self._native.SYTRD_PHASES, self._phase_ms)}

    def _fallback(self, count):
        self._coll.allreduce(self._p[:count], scope="all")

    def run(self, panel, v_mat, w_mat, d, e, tau, j0, width):
        c = self._c
        for name, array, dtype in (("d", d, self._real), ("e", e, self._real), ("tau", tau, c.dtype),
                                   ("panel", panel, c.dtype), ("v_mat", v_mat, c.dtype), ("w_mat", w_mat, c.dtype)):
            if array.dtype != dtype or not array.flags.c_contiguous:
                raise TypeError(f"sytrd's native column loop: {name} must be a C-contiguous {dtype} array "
                                f"for a {c.dtype} matrix, not {array.dtype}")
        calls, nbytes, seconds, launches = self._native.sytrd_panel(
            dtype=self._code, device=self._device, n=c.shape[0], j0=j0, width=width,
            local=c.local.data.ptr, ld=c.local.shape[1], rows_host=self._rows_host,
            cols_host=self._cols_host, rows_dev=self._rows_dev.data.ptr, cols_dev=self._cols_dev.data.ptr,
            panel=panel.data.ptr, v_mat=v_mat.data.ptr, w_mat=w_mat.data.ptr, d=d.data.ptr,
            e=e.data.ptr, tau=tau.data.ptr, work=self._work.data.ptr, p=self._p.data.ptr,
            stream=c.xp.cuda.get_current_stream().ptr, comm=self._comm, nranks=self._nranks,
            fallback=self._fallback, product=self._product_code, phase_ms=self._phase_ms,
            fused_blocks=self._fused_blocks)
        self.launches += launches
        if calls:
            self._coll.count_issued("allreduce", calls, nbytes, seconds)

    def finish(self):
        """After the last panel: a time-out of the fused loop's in-kernel AllReduce already
        recorded by hpcolls raises CollectiveTimeout here (later ones at hpcolls' next host call)."""
        if self._fused_blocks:
            self._native.sytrd_fused_check(self._comm, self._device, self._nranks)
