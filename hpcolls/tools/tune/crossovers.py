"""The crossovers of one collective from its candidates' device times: the pure part of `python -m
hpcolls tune` (no GPU, no MPI), so its logic is tested on made-up timings.

The plan reads a selection row (native/include/hpcolls/plan.h) as segments over the message size:
LL up to ll_max, LL128 up to ll128_max, sentinel above; Allreduce one-shot up to a limit per
protocol, two-shot above; the native path up to native_max_vs_nccl where NCCL is the alternative.
Each limit here is the boundary that costs least over the measured grid, the cost of a size being
how much slower the candidate the boundary gives it is than the fastest candidate at that size
(relative, so that 8 B and 64 MiB weigh alike, and noise at one size moves a boundary only as far
as it matters). A limit is a measured size (the last one the earlier segment won), 0 where the
later segment wins from the smallest size, None (no limit) where the earlier one wins through the
largest.
"""
import itertools
import math

# The plan's protocols in the order its segments take them (plan.cpp's protocol_for), and names.
PROTOCOL_ORDER = ("LL", "LL128", "sentinel")
ONESHOT, TWOSHOT = "one-shot", "two-shot"
NCCL = "NCCL"
TIE = 1e-9


def candidate_name(protocol, algo=None):
    """The printed name of a candidate: 'LL one-shot', 'sentinel', 'NCCL'."""
    return protocol if algo is None else f"{protocol} {algo}"


def excess(t, best):
    """How much slower `t` is than `best` (relative); infinite where the candidate did not run."""
    return math.inf if t is None or best is None else t / best - 1.0


def fastest(curves):
    """Per size, the least time of any curve (None where none ran)."""
    per_size = zip(*curves)
    return [min((t for t in ts if t is not None), default=None) for ts in per_size]


def segments(curves, best):
    """Boundaries k_1 <= ... <= k_{m-1} (indices -1..n-1) giving curves[j] the sizes
    k_j < i <= k_{j+1}, that cost least against `best`; on a tie, the later boundaries (the earlier
    curve kept longer)."""
    n = len(best)
    chosen, chosen_cost = None, math.inf
    for bounds in itertools.combinations_with_replacement(range(-1, n), len(curves) - 1):
        cost = sum(excess(curve_at(curves, bounds, i), best[i]) for i in range(n) if best[i] is not None)
        if chosen is None or cost < chosen_cost - TIE or (abs(cost - chosen_cost) <= TIE and bounds > chosen):
            chosen, chosen_cost = bounds, cost
    return chosen


def owner(bounds, i):
    """Which curve the boundaries give size index i."""
    return sum(1 for k in bounds if i > k)


def curve_at(curves, bounds, i):
    return curves[owner(bounds, i)][i]


def limit(sizes, k):
    """A boundary as the plan's limit: 0 (none of the sizes), a size, or None (all of them)."""
    return 0 if k < 0 else None if k >= len(sizes) - 1 else sizes[k]


def ran(curve):
    return curve is not None and any(t is not None for t in curve)


def derive_row(collective, ranks, sizes, times, base):
    """The selection row of `collective` at `ranks` ranks from `times`: {(protocol, algo): [µs or
    None per size]} (algo ONESHOT/TWOSHOT for Allreduce, None for the others; protocol NCCL for the
    alternative, where it runs), over `sizes` (the plan's bytes, ascending). `base`: the built-in
    row, whose limits stay where nothing was measured to decide them. Returns (row, picks), picks
    giving per size the candidate the row chooses."""
    row = dict(base, collective=collective, max_ranks=ranks)
    n = len(sizes)
    protocol_curves, picks_of, oneshot_limits = {}, {}, {}
    for protocol in PROTOCOL_ORDER:
        one, two = times.get((protocol, ONESHOT)), times.get((protocol, TWOSHOT))
        if ran(one) and ran(two):  # Allreduce: this protocol's own one-shot limit
            (k,) = segments([one, two], fastest([one, two]))
            protocol_curves[protocol] = [one[i] if i <= k else two[i] for i in range(n)]
            picks_of[protocol] = [candidate_name(protocol, ONESHOT if i <= k else TWOSHOT) for i in range(n)]
            oneshot_limits[protocol] = limit(sizes, k)
            continue
        for algo in (None, ONESHOT, TWOSHOT):
            if ran(times.get((protocol, algo))):
                protocol_curves[protocol] = times[(protocol, algo)]
                picks_of[protocol] = [candidate_name(protocol, algo)] * n
                break
    if "LL" in oneshot_limits:
        row["ll_oneshot_max"] = oneshot_limits["LL"]
    if "sentinel" in oneshot_limits or "LL128" in oneshot_limits:  # LL128 reads sentinel's limit
        row["sentinel_oneshot_max"] = oneshot_limits.get("sentinel", oneshot_limits.get("LL128"))
    order = [p for p in PROTOCOL_ORDER if p in protocol_curves]
    native, picks = [None] * n, [None] * n
    if order:
        curves = [protocol_curves[p] for p in order]
        bounds = segments(curves, fastest(curves)) if len(curves) > 1 else ()
        for i in range(n):
            at = order[owner(bounds, i)]
            native[i], picks[i] = protocol_curves[at][i], picks_of[at][i]
        if bounds and order[0] == "LL":  # bounds[j]: the last size of order[j]
            row["ll_max"] = limit(sizes, bounds[0])
            if "LL128" in order:
                j = order.index("LL128")
                end = bounds[j] if j < len(bounds) else n - 1
                row["ll128_max"] = limit(sizes, end) if end > bounds[0] else 0
    nccl = times.get((NCCL, None))
    if ran(nccl) and ran(native):
        (k,) = segments([native, nccl], fastest([native, nccl]))
        row["native_max_vs_nccl"] = limit(sizes, k)
        picks = [picks[i] if i <= k else NCCL for i in range(n)]
    return row, picks
