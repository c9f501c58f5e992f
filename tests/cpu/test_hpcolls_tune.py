"""`python -m hpcolls tune` without a GPU: its arguments, and the crossovers it derives from a
table of timings (hpcolls/tools/tune/crossovers.py, a pure function), checked against the plan
itself: the derived rows, handed to the pure plan binding, pick per size what the derivation says.
Timings are made up fresh each run (random crossovers, noise)."""
import os
import random
import subprocess
import sys

import pytest

from hpcolls import dtypes
from hpcolls.tools.tune import cli, crossovers
from hpcolls.tools.tune.crossovers import NCCL, ONESHOT, TWOSHOT, derive_row, segments

_native = pytest.importorskip("hpcolls._native", reason="the native module is not built")

MiB = 1 << 20
SIZES = cli.FULL_GRID


def base(collective, n=2):
    rows = [dict(r) for r in _native.selection_table() if r["collective"] == collective]
    return next((r for r in rows if n <= r["max_ranks"]), rows[-1])


def curve(latency, per_byte, noise=0.0):
    """µs per size: a latency plus a bandwidth term, with multiplicative noise."""
    return [(latency + per_byte * b) * (1 + random.uniform(-noise, noise)) for b in SIZES]


# -- arguments ------------------------------------------------------------------------------------

def test_arguments_and_their_defaults():
    args = cli.parse_args([])
    assert args.colls == list(cli.COLLECTIVES) and args.max_seconds == cli.DEFAULT_SECONDS
    assert (args.reps, args.warmup, args.graph_calls) == (7, 2, 50) and not args.dry_run
    assert args.sizes[0] == 8 and args.sizes[-1] == 64 * MiB and args.sizes == sorted(set(args.sizes))
    quick = cli.parse_args(["--quick", "--coll", "bcast,allreduce"])
    assert quick.colls == ["allreduce", "bcast"] and quick.max_seconds == cli.QUICK_SECONDS
    assert len(quick.sizes) < len(args.sizes) and quick.sizes[-1] == 64 * MiB and quick.reps == 5
    assert cli.parse_args(["--quick", "--max-seconds", "30", "--reps", "3"]).max_seconds == 30
    assert cli.parse_args(["--max-bytes", str(MiB)]).sizes[-1] == MiB


@pytest.mark.parametrize("argv, what", [(["--coll", "alltoall"], "alltoall not among"),
                                        (["--max-seconds", "0"], "must be positive"),
                                        (["--reps", "0"], "must be positive"),
                                        (["--max-bytes", "4"], "at least 8")])
def test_bad_arguments_are_usage_errors(argv, what, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.parse_args(argv)
    assert exc.value.code == 2 and what in capsys.readouterr().err


def test_tune_is_a_subcommand_and_says_why_it_cannot_run_without_a_gpu():
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    helped = subprocess.run([sys.executable, "-m", "hpcolls", "tune", "--help"], capture_output=True, text=True,
                            timeout=120, env=env)
    assert helped.returncode == 0 and "--max-seconds" in helped.stdout and "HPCOLLS_TUNE_FILE" in helped.stdout
    if _native.device_count() > 0:
        pytest.skip("a GPU is visible: tests/gpu/test_hpcolls_tune_gpu.py runs the tool")
    ran = subprocess.run([sys.executable, "-m", "hpcolls", "tune", "--quick"], capture_output=True, text=True,
                         timeout=120, env=env)
    assert ran.returncode == 1 and "no GPU here" in ran.stdout


# -- crossovers -----------------------------------------------------------------------------------

def test_segments_cost_least_and_keep_the_earlier_curve_on_ties():
    best = [1.0] * 4
    assert segments([[1, 1, 2, 2], [2, 2, 1, 1]], best) == (1,)
    assert segments([[1, 1, 1, 1], [1, 1, 1, 1]], best) == (3,)      # a tie: the first curve throughout
    assert segments([[None, 2, 2, 2], [1, 1, 1, 1]], best) == (-1,)  # a curve that did not run loses
    assert segments([[1, 2, 3, 3], [3, 1, 3, 3], [3, 3, 1, 1]], best) == (0, 1)


def crossing_allreduce(noise=0.0):
    """Allreduce's candidates, made to cross at random sizes; returns (times, where they cross)."""
    ll_one = curve(1.0, 1 / 2000, noise)
    ll_two = curve(random.uniform(1.6, 2.4), 1 / 4000, noise)
    s_one = curve(random.uniform(1.3, 1.8), 1 / 5000, noise)
    s_two = curve(random.uniform(2.5, 3.5), 1 / 12000, noise)
    nccl = curve(random.uniform(15, 25), 1 / 30000, noise)
    return {("LL", ONESHOT): ll_one, ("LL", TWOSHOT): ll_two, ("sentinel", ONESHOT): s_one,
            ("sentinel", TWOSHOT): s_two, (NCCL, None): nccl}


def first_win(a, b):
    """The last size index where a is no slower than b (a is faster below, slower above)."""
    return max((i for i in range(len(SIZES)) if a[i] <= b[i]), default=-1)


def test_allreduce_crossovers_are_where_the_curves_cross():
    times = crossing_allreduce()
    times.pop((NCCL, None))
    row, picks = derive_row("allreduce", 2, SIZES, times, base("allreduce"))
    ll = [min(a, b) for a, b in zip(times[("LL", ONESHOT)], times[("LL", TWOSHOT)])]
    sentinel = [min(a, b) for a, b in zip(times[("sentinel", ONESHOT)], times[("sentinel", TWOSHOT)])]
    assert row["ll_oneshot_max"] == crossovers.limit(SIZES, first_win(times[("LL", ONESHOT)], times[("LL", TWOSHOT)]))
    assert row["sentinel_oneshot_max"] == crossovers.limit(
        SIZES, first_win(times[("sentinel", ONESHOT)], times[("sentinel", TWOSHOT)]))
    assert row["ll_max"] == crossovers.limit(SIZES, first_win(ll, sentinel))
    assert row["native_max_vs_nccl"] == base("allreduce")["native_max_vs_nccl"]  # no NCCL measured: built-in
    assert row["max_ranks"] == 2 and row["ll128_max"] == 0
    fastest = [min(ts[i] for ts in times.values()) for i in range(len(SIZES))]
    picked = {crossovers.candidate_name(*c): t for c, t in times.items()}
    assert all(picked[p][i] == fastest[i] for i, p in enumerate(picks))  # clean curves: the fastest everywhere
    _native.check_selection_rows([row])


def test_the_plan_runs_what_the_derivation_picked():
    """The derived row handed to the plan (the pure binding): at every measured size the plan takes
    the protocol and algorithm the derivation picked, and NCCL where it picked NCCL."""
    times = crossing_allreduce()
    row, picks = derive_row("allreduce", 4, SIZES, times, base("allreduce", 4))
    big = 1 << 30  # regions that hold every size whole, so only the row decides
    for b, pick in zip(SIZES, picks):
        kernel, _, _, _, _, pieces, _, _, protocol = _native.plan(
            b, dtypes.F64, dtypes.SUM, 4, big, 32, sentinel_half_bytes=big, nccl_alternative=True,
            selection_rows=[row])
        if pick == NCCL:
            assert pieces != 1, (b, pick, kernel)
            continue
        want_protocol, want_algo = pick.split(" ")
        assert pieces == 1 and protocol == want_protocol and kernel.startswith(want_algo), (b, pick, kernel, protocol)


def test_noise_moves_a_crossover_by_a_step_at_most():
    random.seed()
    times = crossing_allreduce()
    clean, _ = derive_row("allreduce", 2, SIZES, times, base("allreduce"))
    noisy_times = {c: [t * (1 + random.uniform(-0.03, 0.03)) for t in ts] for c, ts in times.items()}
    noisy, _ = derive_row("allreduce", 2, SIZES, noisy_times, base("allreduce"))
    for field in ("ll_max", "ll_oneshot_max", "sentinel_oneshot_max", "native_max_vs_nccl"):
        index = {None: len(SIZES), 0: -1, **{s: i for i, s in enumerate(SIZES)}}
        assert abs(index[clean[field]] - index[noisy[field]]) <= 1, (field, clean[field], noisy[field])


def test_outliers_do_not_move_a_boundary():
    ll = curve(1.0, 1 / 10000)
    sentinel = curve(4.0, 1 / 100000)  # crossing near 32 KiB
    k = first_win(ll, sentinel)
    assert 4 <= k < len(SIZES) - 2
    ll[1] *= 5        # a bad median far below the crossover
    ll[k - 1] *= 1.2  # and a slow one just below it
    row, _ = derive_row("bcast", 2, SIZES, {("LL", None): ll, ("sentinel", None): sentinel}, base("bcast"))
    assert row["ll_max"] == SIZES[k]


def test_one_protocol_everywhere_gives_no_limit_or_zero():
    fast, slow = curve(1.0, 1 / 1000), curve(2.0, 1 / 500)
    ll_all, _ = derive_row("allgather", 2, SIZES, {("LL", None): fast, ("sentinel", None): slow}, base("allgather"))
    assert ll_all["ll_max"] is None
    s_all, _ = derive_row("allgather", 2, SIZES, {("LL", None): slow, ("sentinel", None): fast}, base("allgather"))
    assert s_all["ll_max"] == 0
    for row in (ll_all, s_all):  # the other collectives keep the built-in one-shot fields
        assert row["ll_oneshot_max"] == base("allgather")["ll_oneshot_max"]
        _native.check_selection_rows([row])


def test_nccl_takes_over_past_the_native_limit():
    native, nccl = curve(1.0, 1 / 1000), curve(20.0, 1 / 8000)
    row, picks = derive_row("reduce", 2, SIZES, {("LL", None): native, (NCCL, None): nccl}, base("reduce"))
    k = first_win(native, nccl)
    assert row["native_max_vs_nccl"] == SIZES[k] and picks[k] == "LL" and picks[k + 1] == NCCL
    assert row["ll_max"] == base("reduce")["ll_max"]  # one protocol: nothing decided about LL's range


def test_ll128_gets_the_middle_segment():
    ll, ll128, sentinel = curve(1.0, 1 / 1000), curve(1.5, 1 / 3000), curve(4.0, 1 / 6000)
    times = {("LL", None): ll, ("LL128", None): ll128, ("sentinel", None): sentinel}
    row, picks = derive_row("bcast", 2, SIZES, times, base("bcast"))
    a, b = first_win(ll, ll128), first_win(ll128, sentinel)
    assert a < b and row["ll_max"] == SIZES[a] and row["ll128_max"] == SIZES[b]
    assert picks[a] == "LL" and picks[a + 1] == "LL128" and picks[b + 1] == "sentinel"
    _native.check_selection_rows([row])
    no_gain = {**times, ("LL128", None): [t * 3 for t in ll128]}
    assert derive_row("bcast", 2, SIZES, no_gain, base("bcast"))[0]["ll128_max"] == 0


def test_a_candidate_that_stops_running_loses_those_sizes():
    one, two = curve(1.0, 1 / 1000), curve(2.0, 1 / 1500)
    one[-3:] = [None] * 3  # e.g. past what its region holds
    row, picks = derive_row("allreduce", 2, SIZES, {("LL", ONESHOT): one, ("LL", TWOSHOT): two}, base("allreduce"))
    assert row["ll_oneshot_max"] is not None and row["ll_oneshot_max"] <= SIZES[-4]
    assert all(p == "LL two-shot" for p in picks[-3:])


def test_derive_keeps_the_builtin_rows_of_what_was_cut_short():
    args = cli.parse_args(["--quick"])
    n = len(args.sizes)
    fast, slow = curve(1.0, 1 / 1000)[:n], curve(2.0, 1 / 500)[:n]
    measured = {"bcast": ({("LL", None): fast, ("sentinel", None): slow}, None),
                "allgather": ({("LL", None): fast[:3], ("sentinel", None): slow[:3]}, "out of time at 1 B"),
                "reduce": ({}, "only ('LL', None) runs here: nothing to choose")}
    rows, lines = cli.derive(_native, args, measured)
    assert [r["collective"] for r in rows] == ["bcast"]
    text = "\n".join(lines)
    assert "## allgather: built-in rows kept (out of time" in text and "## reduce: built-in rows kept (only" in text
    assert "## bcast: device µs per call" in text and "tuned:    ll_max" in text and "built-in: ll_max" in text
