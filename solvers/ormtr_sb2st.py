"""ormtr_sb2st / unmtr_hb2st: Y ← Q2 Y with the Q2 = G of sb2st / hb2st (what dormtr does for
one-stage sytrd's Q, for the bulge-chasing reflectors), on whole columns held by one rank.

G is the product of sb2st's reflectors in the order it made them (sweep by sweep, step by step
within a sweep). Two of them commute unless their rows meet, and the reflectors of one sweep
never meet each other; those of g consecutive sweeps at one step k therefore multiply into one
block reflector I - V T Vᴴ (V the (b+g-1) × g parallelogram of BulgeLayout; T by the UT
transform of larft), and G is the product of these groups taken σ ascending and, within a
group of sweeps, k descending. Y ← G Y applies them in reverse: in slots τ = (nσ-1-σ) + k of
increasing τ, each slot a batch of groups on disjoint rows evenly spaced in Y, so that one slot
is two batched GEMMs over a strided view of Y (W = Vᴴ Y, then Y -= (V T) W in place):
nσ + kmax - 1 slots in all, about n/g + n/b.

The columns are whole on the rank (the tridiagonal solver's own columns, before they are moved
into the block-cyclic layout), so there is no communication: the rows a reflector mixes are all
here. Work for k columns: 2n²k(b+g-1)/b flops (real; the parallelograms' zero triangles
included), 4n²k for g = b.

On the GPU, float64 and complex128 with b = g = 64 (the GPU's bandwidth), each slot is one fused
kernel instead (native/solvers/ormtr_sb2st.h): a block per group and column tile keeps its rows of
Y in shared memory between the two products, so Y crosses memory once per slot where the GEMMs
read it three times and W twice, and it skips the zero triangles.
"""
import numpy as np

from .backend.arrays import adjoint_product, array_module, is_numpy, subtract_product
from .householder import larft
from .kernels import kernels

FACTOR_CHUNK_BYTES = 256 << 20   # V T of the groups of consecutive slots formed at once
GEMM_COLUMNS = 1024   # columns of Y per batched-GEMM pass: its temporaries (the slot's rows of Y
                      # gathered, W, V T W) are then n × 1024 each, not n × k
METHODS = ("auto", "kernel", "gemm")


def ormtr_sb2st(reflectors, y, method="auto", coll=None):
    """Q2 y for the n × k array ``y`` (numpy or cupy, of any dtype); returns a new array of the
    reflectors' dtype and backend (host columns go to the device in a GPU run). ``method``:
    "kernel" (the fused slot kernel: GPU, float64 / complex128, b = g = 64), "gemm" (two batched
    GEMMs per slot), "auto" (the kernel where it applies); ``coll``: where to note which ran."""
    kernel, how = _slot_kernel(reflectors, method)
    if coll is not None:
        coll.note("q2", how)
    layout = reflectors.layout
    xp = array_module(reflectors.v)
    n, ncols = y.shape
    b, g, h = layout.band, layout.group, layout.height
    dtype = reflectors.v.dtype
    if ncols == 0 or layout.groups == 0:
        return xp.array(xp.asarray(y), dtype=dtype)
    padded = xp.zeros((n + h, ncols), dtype=dtype)     # the last groups reach past row n-1
    padded[:n] = xp.asarray(y)
    item = padded.itemsize
    for slots, vt, base in _factors(reflectors, xp):
        if kernel is not None:
            if vt is None:          # these slots are empty
                continue
            kernel.ormtr_sb2st_device(
                dtype=kernel.DTYPES[dtype.name], device=xp.cuda.Device().id, y=padded.data.ptr, ld=ncols,
                ncols=ncols, v=reflectors.v.data.ptr, v_base=0, vt=vt.data.ptr, vt_base=base,
                slot_start=layout.slot_start, slot_row=layout.slot_row, first_slot=slots.start,
                end_slot=slots.stop, band=b, group=g, stream=xp.cuda.get_current_stream().ptr)
            continue
        for slot in slots:
            first, stop = int(layout.slot_start[slot]), int(layout.slot_start[slot + 1])
            if stop == first:
                continue
            v = reflectors.v[first:stop]
            for c0 in range(0, ncols, GEMM_COLUMNS):   # Y -= V T Vᴴ Y
                width = min(GEMM_COLUMNS, ncols - c0)
                rows = xp.lib.stride_tricks.as_strided(
                    padded[int(layout.slot_row[slot]):, c0:], shape=(stop - first, h, width),
                    strides=((g + b) * ncols * item, ncols * item, item))
                subtract_product(xp, rows, vt[first - base:stop - base], adjoint_product(xp, v, rows))
    return padded[:n]


def _slot_kernel(reflectors, method):
    """(solvers._kernels, what runs) when the fused kernel takes these reflectors, else (None, why
    the GEMMs run); ``method`` "kernel" where it cannot is a ValueError."""
    if method not in METHODS:
        raise ValueError(f"ormtr_sb2st: method must be one of {METHODS}, got {method!r}")
    if method == "gemm":
        return None, "batched GEMMs (requested)"
    layout, v = reflectors.layout, reflectors.v
    native, why = kernels()
    if native is None:
        why = f"batched GEMMs ({why})"
    elif is_numpy(array_module(v)):
        native, why = None, "batched GEMMs (host arrays)"
    elif not native.ormtr_sb2st_device_supports(native.DTYPES[v.dtype.name], layout.band, layout.group):
        native, why = None, (f"batched GEMMs (the kernel takes float64 and complex128 with band = group = "
                             f"{native.ORMTR_SB2ST_GROUP}, not {v.dtype} with band {layout.band}, group {layout.group})")
    if native is None and method == "kernel":
        raise ValueError(f"ormtr_sb2st: method 'kernel' cannot run here: {why}")
    return native, why if native is None else "fused slot kernel"


def _factors(reflectors, xp):
    """(slots, V T of their groups, the first group's storage offset) for runs of consecutive
    slots of about FACTOR_CHUNK_BYTES of V: the block reflectors' T (larft) and V T do not depend
    on Y, so they are formed for many slots at once, a few batched operations per run where one
    slot at a time took as many per slot (with a subset's few columns, those launches were most
    of the time on the GPU)."""
    layout, v = reflectors.layout, reflectors.v
    groups_at_once = FACTOR_CHUNK_BYTES // max(1, v[0].nbytes)
    starts = layout.slot_start
    slot = 0
    while slot < layout.slots:
        last_fitting = int(np.searchsorted(starts, starts[slot] + groups_at_once, "right")) - 1
        end = min(max(slot + 1, last_fitting), layout.slots)
        first, stop = int(starts[slot]), int(starts[end])
        vt = v[first:stop] @ larft(xp, v[first:stop], reflectors.tau[first:stop]) if stop > first else None
        yield range(slot, end), vt, first
        slot = end
