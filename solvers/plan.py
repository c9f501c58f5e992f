"""The solver's plan: every choice a solve makes, decided once where the solve is entered.

The entries — ``solvers.eigh``, ``solvers.cholesky``, the drivers ``sygvd`` and ``syevd`` on
DistMatrix inputs, the command line and the bench — call ``resolve`` once (the drivers through
``plan_for``) and hand the frozen SolverPlan it returns to the stages, which read its fields and
decide nothing (SLATE passes its ``opts`` down so, DLA-Future its tune struct). What a user may
ask for keeps its name and its error for a bad value: ``method``, ``reduction``, ``band``,
``tridiagonal``, ``nb``.

Each constant stands once, beside its rule, with a one-line why; where it was measured, the
numbers are in docs/PERFORMANCE.md under the anchor named, not here. A rule that depends on what
only a stage finds is a method of the plan the stage calls with that data: how many eigenpairs
a value range holds is known once the tridiagonal exists (SolverPlan.subset_solver). Constants
that tune one kernel alone, whatever the problem (a block size inside sygst's blocked way, a
chase kernel's threads per block, chunks that bound temporaries), stay beside that kernel.

    method         distributed  the stages (potrf, sygst/hegst, sytrd/hetrd, ...) over the grid
                   single       one LAPACK / cuSOLVER call for the whole problem on rank 0
                                (whole.py), the result handed to every rank; at one rank, that
                                call alone
                   replicated   (solvers.eigh only, where every rank holds the whole problem)
                                every rank makes that call itself: no messages at all; identical
                                input to the same library gives every rank the same bits
    reduction      1stage       sytrd / hetrd (one symmetric matrix-vector product over the
                                trailing matrix per column: memory-bound), then ormtr / unmtr
                   2stage       sy2sb / he2hb (dense to band b, GEMMs), sb2st / hb2st (bulge
                                chasing), then ormtr_sb2st (Q2) and ormtr_sy2sb (Q1)
    tridiagonal    rows         divide and conquer's eigenvectors made by rows per rank
                                (stedc_distributed.py)
                   replicated   every rank solves the whole tridiagonal problem and keeps its
                                part (for measuring what that replica cost)
    subset solver  mrrr | invit | dc: a subset's tridiagonal eigenpairs (stevr.py)
"""
from dataclasses import dataclass

import numpy as np

from .backend.arrays import is_numpy
from .backend.threads import policy_for
from .errors import InputError

# ---- block size ------------------------------------------------------------------------------

# nb when none is given (at most n), by device: the sizes every measurement ran at, not compared
# against others (docs/PERFORMANCE.md#solver-block-size).
DEFAULT_NB = {"cpu": 32, "gpu": 256}


def block_size(requested, n, on_gpu):
    """nb: ``requested``, a positive integer (InputError otherwise, as the command line's --nb),
    else (None) DEFAULT_NB of the device at most n (and at least 1)."""
    if requested is None:
        return max(1, min(n, DEFAULT_NB[_device(on_gpu)]))
    if isinstance(requested, bool) or not isinstance(requested, (int, np.integer)) or requested < 1:
        raise InputError(f"nb (the block size) must be a positive integer, got {requested!r}")
    return int(requested)


# ---- method ----------------------------------------------------------------------------------

METHODS = ("auto", "distributed", "single", "replicated")
# 'auto' on CPU ranks, by rank count: below this order, gathering the problem to one rank and
# solving it there with the node's every core beats the distributed stages
# (docs/PERFORMANCE.md#solver-method-crossover; 'single' won at every order measured, so at least that).
CPU_CROSSOVER = {2: 6000, 4: 4096}
# ... and below this one (solvers.eigh only), solving on every rank beats that hand-off's messages.
REPLICATED_BELOW = {2: 256, 4: 512}


def choose_method(requested, n, nranks, on_gpu, replicable=False):
    """(method, why) for ``requested`` in METHODS, a problem of order ``n`` on ``nranks``;
    ``replicable``: every rank holds the whole problem (solvers.eigh). 'auto': single at one
    rank; on several GPU ranks distributed (nothing measured there); on CPU ranks by the orders
    above, rank counts between the measured ones taking the nearest measured count below."""
    if requested not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}; got {requested!r}")
    if requested == "replicated" and not replicable:
        raise InputError("method 'replicated' needs the whole problem on every rank "
                         "(solvers.eigh); distributed inputs take 'single'")
    if requested != "auto":
        return requested, "requested"
    if nranks == 1:
        return "single", "auto: one rank"
    if on_gpu:
        return "distributed", "auto: several GPU ranks"
    measured = max([p for p in CPU_CROSSOVER if p <= nranks], default=min(CPU_CROSSOVER))
    where = f"measured at {measured} CPU ranks"
    if replicable and n < REPLICATED_BELOW[measured]:
        return "replicated", f"auto: n = {n} < {REPLICATED_BELOW[measured]}, {where}"
    if n < CPU_CROSSOVER[measured]:
        return "single", f"auto: n = {n} < {CPU_CROSSOVER[measured]}, {where}"
    return "distributed", f"auto: n = {n} >= {CPU_CROSSOVER[measured]}, {where}"


def factored_method(requested, chosen):
    """The method of a solve against B's Cholesky factor: the distributed stages, which alone
    take a factor ('single' asked for is an error; chosen by 'auto', it gives way)."""
    if chosen != "single":
        return chosen
    if requested == "single":
        raise InputError("method 'single' takes B itself, not its factor (b_factored=True)")
    return "distributed"


# ---- reduction to tridiagonal form -----------------------------------------------------------

REDUCTIONS = ("auto", "1stage", "2stage")
# The order from which 'auto' takes two-stage, by device and kind of data (None: never). One-stage
# has fewer flops, so two-stage wins only where sytrd's memory-bound products dominate: from the
# smallest order measured on GPUs, and never on CPUs, where it was slower
# (docs/PERFORMANCE.md#solver-two-stage-crossover).
TWO_STAGE_FROM = {("gpu", "real"): 4096, ("gpu", "complex"): 4096,
                  ("cpu", "real"): None, ("cpu", "complex"): None}


def check_reduction(requested):
    """InputError unless ``requested`` is one of REDUCTIONS."""
    if requested not in REDUCTIONS:
        raise InputError(f"reduction must be one of {', '.join(REDUCTIONS)}; got {requested!r}")


def choose_reduction(requested, n, on_gpu, complex_data=False):
    """(reduction, why) for ``requested`` in REDUCTIONS and a problem of order n (complex
    Hermitian where ``complex_data``)."""
    check_reduction(requested)
    if requested != "auto":
        return requested, "requested"
    device, kind = _device(on_gpu), ("complex" if complex_data else "real")
    start = TWO_STAGE_FROM[device, kind]
    where = f"{kind} data on {device.upper()}"
    if start is None:
        return "1stage", f"auto: one-stage for {where} (two-stage measured slower there)"
    if n >= start:
        return "2stage", f"auto: n = {n} >= {start} for {where}"
    return "1stage", f"auto: n = {n} < {start} for {where}"


# Two-stage's bandwidth b when none is given: the largest divisor of nb up to this. GPU: the
# largest band whose chase runs on the device (a wider one's chase block needs more shared
# memory than a block gets, and sb2st then runs on the host, much slower;
# docs/PERFORMANCE.md#solver-band).
BAND_TARGET = {"gpu": 64, "cpu": 32}


def check_band(band, nb):
    """The bandwidth b must be positive and divide the block size nb (a panel of b columns
    then never straddles two block columns)."""
    if band < 1 or nb % band:
        raise ValueError(f"two-stage reduction: the bandwidth {band} must be a positive divisor "
                         f"of the block size nb = {nb}")


def default_band(nb, target):
    """The largest divisor of nb that is at most ``target`` (1 for a block size that is no
    positive integer: a solve that makes no layout does not fail on it)."""
    return max((d for d in range(1, min(nb, target) + 1) if nb % d == 0), default=1)


def band_for(band, nb, on_gpu):
    """The bandwidth: ``band`` checked (a positive divisor of nb), or the default."""
    if band is None:
        return default_band(nb, BAND_TARGET[_device(on_gpu)])
    try:
        check_band(band, nb)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return band


# ---- the stages of the reductions ------------------------------------------------------------

PANEL_METHODS = ("auto", "cholqr2", "geqrf")
# How sy2sb's panels are factored when 'auto': CholeskyQR2 (geqrf where it cannot be trusted) on
# both devices, from sy2sb timed whole with each (docs/PERFORMANCE.md#solver-panel-method).
AUTO_PANEL = {"cpu": "cholqr2", "gpu": "cholqr2"}


def panel_method(requested, on_gpu):
    """The panels' factorization for ``requested`` in PANEL_METHODS ('auto': AUTO_PANEL)."""
    if requested not in PANEL_METHODS:
        raise ValueError(f"panel_qr: method must be one of {PANEL_METHODS}, got {requested!r}")
    return AUTO_PANEL[_device(on_gpu)] if requested == "auto" else requested


# Columns of the trailing matrix per sy2sb update GEMM, by device: wider on GPUs, where larger
# GEMMs paid for the redundant flops of the diagonal chunks; on CPUs those flops cost their full
# price (docs/PERFORMANCE.md#solver-sy2sb-chunk).
SY2SB_CHUNK = {"gpu": 4096, "cpu": 2048}

SYGST_ONE_RANK = ("solves", "blocked")
# One rank's way for itype 1 (sygst.py): LAPACK's blocked order on GPUs, where it was faster
# (docs/PERFORMANCE.md#solver-sygst-method); two library solves on CPUs (not compared there).
SYGST_ONE_RANK_ITYPE1 = {"gpu": "blocked", "cpu": "solves"}


def sygst_method(requested, on_gpu):
    """One rank's way for itype 1: ``requested`` (SYGST_ONE_RANK) or, None, the device's."""
    if requested is not None and requested not in SYGST_ONE_RANK:
        raise ValueError(f"sygst: method must be one of {SYGST_ONE_RANK}, got {requested!r}")
    return requested or SYGST_ONE_RANK_ITYPE1[_device(on_gpu)]


def sytrd_product(ranks):
    """The local product C₂₂ v of sytrd's native column loop over ``ranks`` ranks: at one rank
    hemv_lower, which reads only the lower triangle, half a gemv's bytes
    (docs/PERFORMANCE.md#solver-symv); over several no rank holds a whole triangle."""
    return "hemv_lower" if ranks == 1 else "gemv"


# The native column loop of sytrd over several ranks: 'fused' runs a panel's columns in one
# cooperative launch whose kernel all-reduces each column through hpcolls' device API (one launch
# per panel instead of about eight per column; native/solvers/sytrd_fused.cu, docs/SOLVER.md,
# "The fused column loop"); 'kernels' is the loop of one launch per step with a host AllReduce
# between. 'auto' takes kernels until the fused loop has run on a GPU and been measured faster
# (docs/SOLVER.md, "The fused column loop"); 'fused' asks for it, and sytrd still replaces it by
# kernels where it cannot run (not hpcolls' native path, no device API, a message past its
# scratch: the stage note says why).
SYTRD_LOOPS = ("auto", "fused", "kernels")


def choose_sytrd_loop(requested, ranks, on_gpu):
    """('fused' | 'kernels', why) for sytrd's native column loop over ``ranks`` ranks."""
    if requested not in SYTRD_LOOPS:
        raise InputError(f"sytrd loop must be one of {', '.join(SYTRD_LOOPS)}; got {requested!r}")
    if requested == "kernels":
        return "kernels", "requested"
    if not on_gpu:
        return "kernels", "a CPU run has no native loop"
    if ranks == 1:
        return "kernels", "one rank: no column collective to fuse"
    if requested == "auto":
        return "kernels", "auto: the fused loop is taken only when asked for until it is measured on a GPU"
    return "fused", "requested"


# ---- the tridiagonal eigenproblem ------------------------------------------------------------

# How divide and conquer's eigenvectors are made over the ranks: 'auto' takes rows per rank over
# P > 1 ranks, which no longer holds an n × n replica on each (docs/PERFORMANCE.md#solver-stedc-rows).
TRIDIAGONAL = ("auto", "rows", "replicated")


def vectors_by(requested, ranks):
    """('rows' | 'replicated', why) for ``requested`` in TRIDIAGONAL over ``ranks`` ranks: rows
    per rank over P > 1 ranks unless 'replicated' asks for every rank to solve the whole problem
    and keep its part (for measuring what the replica cost); one rank holds every row either way."""
    if requested not in TRIDIAGONAL:
        raise InputError(f"tridiagonal must be one of {', '.join(TRIDIAGONAL)}; got {requested!r}")
    if ranks == 1:
        return "replicated", "one rank"
    if requested == "replicated":
        return "replicated", "requested"
    return "rows", "requested" if requested == "rows" else f"auto: {ranks} ranks"


# Order of the blocks a GPU run's divide and conquer hands to LAPACK on the host (all of them up
# front, spread over the rank's cores, while the merges run on the device); not compared against
# other orders (docs/PERFORMANCE.md#solver-tridiagonal-method). A CPU run's leaves are the two
# halves, solved concurrently by dstevd.
STEDC_LEAF = 512


def stedc_leaf(n, on_gpu):
    """The order of divide and conquer's leaves for a tridiagonal of order n."""
    return STEDC_LEAF if on_gpu else -(-n // 2)


# Eigenvalues only (jobz N) in a GPU run: from this order by the kernels' multisection on the
# device (stein.py, each rank a share), not host dsterf, which is O(n²) on one core; below the
# smallest order measured dsterf's milliseconds are kept (docs/PERFORMANCE.md#solver-tridiagonal-method).
DEVICE_EIGENVALUES_FROM = 2048


def eigenvalues_by(n, on_gpu):
    """(True, why) where the eigenvalues alone of order n come from the device's multisection,
    else (False, why)."""
    if on_gpu and n >= DEVICE_EIGENVALUES_FROM:
        return True, (f"multisection on the device, a share per rank [n = {n} >= "
                      f"{DEVICE_EIGENVALUES_FROM}: host dsterf is O(n²) on one core]")
    return False, "host dsterf"


# A subset's tridiagonal eigenpairs ('auto'): bisection + MRRR costs O(n) per eigenpair with a
# large constant, so divide and conquer (mostly GEMMs) overtakes it at a modest k: on CPUs for k
# above this share of n (docs/PERFORMANCE.md#solver-subset-method).
CPU_DC_FRACTION = 0.05
# In a GPU run MRRR would run on the host, so multisection + inverse iteration takes k up to this
# share of n and divide and conquer more; not raised to a half, where its orthonormalization
# (n k²) and batches of inverse iteration were not measured (docs/PERFORMANCE.md#solver-subset-method).
GPU_INVIT_FRACTION = 0.25


def choose_subset_solver(subset, k, n, on_gpu):
    """('mrrr' | 'invit' | 'dc', why) for k of n wanted eigenpairs of the tridiagonal (a stage
    note); a range that names its method (eigh's driver 'evr', 'evx', 'gvx') keeps it."""
    if subset.solver != "auto":
        return subset.solver, "asked for"
    if on_gpu:
        if k <= GPU_INVIT_FRACTION * n:
            return "invit", f"auto: a GPU run, k = {k} <= {GPU_INVIT_FRACTION:g} n"
        return "dc", f"auto: a GPU run, k = {k} > {GPU_INVIT_FRACTION:g} n (MRRR would run on the host)"
    if k > CPU_DC_FRACTION * n:
        return "dc", f"auto: k = {k} > {CPU_DC_FRACTION:g} n on the CPU"
    return "mrrr", f"auto: k = {k} <= {CPU_DC_FRACTION:g} n on the CPU"


# ---- the plan --------------------------------------------------------------------------------

@dataclass(frozen=True)
class SolverPlan:
    """Every choice of one solve of order ``n`` over ``ranks`` ranks on ``device``, with why
    where the run reports it. ``threads``: this rank's backend.threads.ThreadPolicy (None where
    the entry applies none: a stage called alone)."""
    device: str
    n: int
    ranks: int
    nb: int
    method: str
    method_why: str
    reduction: str
    reduction_why: str
    band: int
    panel: str
    sy2sb_chunk: int
    sygst_one_rank: str
    sytrd_product: str
    sytrd_loop: str
    sytrd_loop_why: str
    tridiagonal: str
    tridiagonal_why: str
    stedc_leaf: int
    eigenvalues_on_device: bool
    eigenvalues_why: str
    threads: object = None
    sytrd_profile: bool = False  # measurement only: time the column step's phases (solvers.bench --sytrd-phases)

    @property
    def on_gpu(self):
        return self.device == "gpu"

    def subset_solver(self, subset, k):
        """('mrrr' | 'invit' | 'dc', why) for k wanted eigenpairs of the tridiagonal."""
        return choose_subset_solver(subset, k, self.n, self.on_gpu)

    def header(self):
        """(key, value) lines of the run header: what was chosen and why (the BLAS threads, which
        the command line prints apart, are ``threads.line``)."""
        reduction = (f"1stage [{self.reduction_why}]" if self.reduction == "1stage"
                     else f"2stage, band {self.band} [{self.reduction_why}]")
        return [("method", f"{self.method} [{self.method_why}]"), ("reduction", reduction),
                ("tridiagonal", f"divide and conquer's vectors {self.tridiagonal} [{self.tridiagonal_why}], "
                                f"leaves of order <= {self.stedc_leaf}; eigenvalues alone by {self.eigenvalues_why}"),
                ("stages", f"panel QR {self.panel}, sy2sb chunk {self.sy2sb_chunk}, one-rank sygst "
                           f"{self.sygst_one_rank}, sytrd product {self.sytrd_product}, sytrd loop "
                           f"{self.sytrd_loop} [{self.sytrd_loop_why}]")]


def resolve(xp, n, ranks, *, complex_data=False, nb=None, method="auto", reduction="auto",
            band=None, tridiagonal="auto", replicable=False, b_factored=False, threads=None,
            sytrd_loop="auto"):
    """The SolverPlan of a problem of order n (complex Hermitian where ``complex_data``) over
    ``ranks`` ranks on the backend ``xp``, with what was asked for: ``nb`` (block size; None:
    block_size's), ``method`` (METHODS; 'replicated' where ``replicable``: every rank holds the
    whole problem), ``reduction`` (REDUCTIONS), ``band`` (a divisor of nb; None: band_for's),
    ``tridiagonal`` (TRIDIAGONAL), ``sytrd_loop`` (SYTRD_LOOPS); ``b_factored``: B comes as its Cholesky factor;
    ``threads``: the entry's ThreadPolicy. A bad request raises InputError, identically on
    every rank (the same arguments everywhere), before any work."""
    on_gpu = not is_numpy(xp)
    device = _device(on_gpu)
    nb = block_size(nb, n, on_gpu)
    reduced_by, reduction_why = choose_reduction(reduction, n, on_gpu, complex_data)
    band = band_for(band, nb, on_gpu)
    tridiagonal, tridiagonal_why = vectors_by(tridiagonal, ranks)
    chosen, method_why = choose_method(method, n, ranks, on_gpu, replicable)
    if b_factored:
        chosen = factored_method(method, chosen)
    on_device, eigenvalues_why = eigenvalues_by(n, on_gpu)
    loop, loop_why = choose_sytrd_loop(sytrd_loop, ranks, on_gpu)
    return SolverPlan(
        device=device, n=n, ranks=ranks, nb=nb, method=chosen, method_why=method_why,
        reduction=reduced_by, reduction_why=reduction_why, band=band,
        panel=panel_method("auto", on_gpu), sy2sb_chunk=SY2SB_CHUNK[device],
        sygst_one_rank=sygst_method(None, on_gpu),
        sytrd_product=sytrd_product(ranks), sytrd_loop=loop, sytrd_loop_why=loop_why,
        tridiagonal=tridiagonal, tridiagonal_why=tridiagonal_why, stedc_leaf=stedc_leaf(n, on_gpu),
        eigenvalues_on_device=on_device, eigenvalues_why=eigenvalues_why, threads=threads)


def _device(on_gpu):
    return "gpu" if on_gpu else "cpu"


def plan_for(a, plan=None, *, method="auto", reduction="auto", band=None, tridiagonal="auto",
             b_factored=False, sytrd_loop="auto"):
    """The plan of a driver's solve (sygvd, syevd) on the DistMatrix ``a``: ``plan`` as an entry
    above resolved it (solvers.eigh, the command line, the bench: then nothing else may be asked
    for here), else resolved from what was asked for, on a's grid and block size."""
    if plan is None:
        return resolve(a.xp, a.shape[0], a.grid.size, complex_data=np.dtype(a.dtype).kind == "c",
                       nb=a.nb, method=method, reduction=reduction, band=band,
                       tridiagonal=tridiagonal, b_factored=b_factored,
                       threads=policy_for(a.grid.comm), sytrd_loop=sytrd_loop)
    if (method, reduction, band, tridiagonal, sytrd_loop) != ("auto", "auto", None, "auto", "auto"):
        raise ValueError("a solve takes its choices from its plan or as arguments, not both")
    if (plan.n, plan.nb, plan.ranks) != (a.shape[0], a.nb, a.grid.size):
        raise ValueError(f"the plan is for n = {plan.n}, nb = {plan.nb} on {plan.ranks} ranks, "
                         f"not n = {a.shape[0]}, nb = {a.nb} on {a.grid.size}")
    return plan
