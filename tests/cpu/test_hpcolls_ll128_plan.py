"""LL128 in the plan and the torn-line probe's argument checks, without a GPU: the LL128 kernels are
taken only where the probe agreed (ll128_available) and the region holds the message, never under
a diagnosis setting; their grids are whole warps, a warp per tile; their largest message is the
inverse of their scratch need. And the check NativeComm.probe_ll128 makes of its arguments before
any CUDA call (ll128_probe_arguments_error, exposed on its own), and each rank's verdict."""
import pytest

from hpcolls import dtypes, ll128_probe

_native = pytest.importorskip("hpcolls._native", reason="the native module is not built")

MiB = 1 << 20
LL128 = _native.PROTOCOLS.index("LL128")
REGION_HALF = 8 * MiB  # the default 16 MiB LL128 region, one half
TILE_PAYLOAD, TILE_BYTES = 480, 512


def plan(nbytes, nranks, available=True, **kw):
    kw.setdefault("max_blocks", 32)
    kw.setdefault("protocol", LL128)
    kernel, blocks, threads, _, piece, pieces, largest, _, protocol = _native.plan(
        nbytes, kw.pop("code", dtypes.F64), kw.pop("op", dtypes.SUM), nranks, kw.pop("half_bytes", 4 * MiB),
        ll128_half_bytes=kw.pop("ll128_half_bytes", REGION_HALF), ll128_available=available, **kw)
    return dict(kernel=kernel, blocks=blocks, threads=threads, piece=piece, pieces=pieces, largest=largest,
                protocol=protocol)


def tiles(nbytes):
    chunks = -(-nbytes // 16)
    return -(-chunks // 30)


@pytest.mark.parametrize("nranks", [1, 2, 3, 4, 8])
def test_forced_ll128_takes_allreduce_where_the_probe_agreed(nranks):
    for nbytes in (8, 480, 481, 64 << 10, MiB + 8):
        p = plan(nbytes, nranks, algo=1)
        assert (p["kernel"], p["protocol"], p["pieces"]) == ("two-shot (LL128)", "LL128", 1), (nbytes, p)
        assert plan(nbytes, nranks, algo=0)["kernel"] == "one-shot (LL128)"
        off = plan(nbytes, nranks, available=False, algo=1)
        assert off["protocol"] == "LL" and off["kernel"] != "two-shot (LL128)", "no probe, no LL128"


def test_never_under_a_diagnosis_setting_nor_for_other_collectives():
    assert plan(4096, 4, threads_override=64)["protocol"] == "LL"
    assert plan(4096, 4, ll_mode=1)["protocol"] == "LL"
    for collective in range(1, len(_native.COLLECTIVES)):
        assert plan(4096, 4, collective=collective)["protocol"] == "LL", _native.COLLECTIVES[collective]
    assert plan(4096, 4, ll128_half_bytes=0)["protocol"] == "LL", "no region, no LL128"


def test_auto_never_picks_ll128_while_the_table_says_0():
    """The built-in table has ll128_max 0 until the lead measures it: auto stays where it was."""
    rows = _native.selection_table()
    if all(r["ll128_max"] == 0 for r in rows if r["collective"] == "allreduce"):
        for nbytes in (8, 64 << 10, MiB):
            assert plan(nbytes, 4, protocol=-1)["protocol"] != "LL128"


@pytest.mark.parametrize("nranks", [2, 3, 4, 8])
def test_grid_is_a_warp_per_tile(nranks):
    for nbytes in (8, 480, 481, 4800, 123457, MiB):
        p = plan(nbytes, nranks, algo=1, max_blocks=16)
        assert p["threads"] % 32 == 0 and 32 <= p["threads"] <= 256
        assert p["blocks"] * p["threads"] >= min(tiles(nbytes) * 32, 16 * 256), (nbytes, p)
        assert p["blocks"] <= 16


@pytest.mark.parametrize("nranks", [1, 2, 4, 7])
def test_largest_message_is_the_inverse_of_the_scratch_need(nranks):
    half = 1 << 18
    one = half // (nranks * TILE_BYTES) * TILE_PAYLOAD
    two = half // (2 * nranks * TILE_BYTES) * nranks * TILE_PAYLOAD
    assert plan(1, nranks, algo=0, ll128_half_bytes=half)["largest"] == one
    assert plan(1, nranks, algo=1, ll128_half_bytes=half)["largest"] == two
    assert plan(two, nranks, algo=1, ll128_half_bytes=half)["pieces"] == 1
    over = plan(two + 16, nranks, algo=1, ll128_half_bytes=half, half_bytes=4096)
    assert over["pieces"] > 1, over


def test_probe_arguments_are_checked_without_cuda():
    ok = dict(nranks=4, area_bytes=16 * MiB, rank=3, write_s=0.01, wait_s=2.0)
    assert _native.ll128_probe_arguments_error(**ok) == ""
    for change, says in ((dict(nranks=0), "ranks"), (dict(nranks=33), "ranks"), (dict(rank=4), "rank 4"),
                         (dict(rank=-1), "rank -1"), (dict(write_s=0.0), "write time"),
                         (dict(write_s=2.0), "write time"), (dict(write_s=float("nan")), "write time"),
                         (dict(wait_s=0.0), "wait bound"), (dict(wait_s=float("inf")), "wait bound"),
                         (dict(area_bytes=1024), "holds no tile")):
        why = _native.ll128_probe_arguments_error(**{**ok, **change})
        assert says in why, (change, why)


def test_probe_lines_per_pair():
    assert _native.ll128_probe_lines_per_pair(16 * MiB, 4) == _native.LL128_PROBE_MAX_LINES
    assert _native.ll128_probe_lines_per_pair(512 + 4 * 128 * 2, 2) == 4  # the control tile, 4 lines from each of 2
    assert _native.ll128_probe_lines_per_pair(512 + 4 * 128 * 2 - 1, 2) == 0
    assert _native.ll128_probe_lines_per_pair(10_000, 1) % 4 == 0


def test_local_verdict():
    clean = {"lines": 256, "iterations": 900, "min_iterations": 300, "observed": 5000, "torn": 0, "stale": 0,
             "timed_out": 0, "lines_per_pair": 256, "pairs": 3, "seconds": 0.011}
    assert ll128_probe.local_verdict(clean) is None
    assert "torn" in ll128_probe.local_verdict({**clean, "torn": 1})
    assert "timed out" in ll128_probe.local_verdict({**clean, "timed_out": 2})
    assert "last pass" in ll128_probe.local_verdict({**clean, "stale": 1})
    assert "inconclusive" in ll128_probe.local_verdict({**clean, "min_iterations": ll128_probe.MIN_PASSES - 1})
    assert "inconclusive" in ll128_probe.local_verdict({**clean, "observed": 0})
    assert "failed: boom" in ll128_probe.local_verdict(None, "boom")
    assert "did not run" in ll128_probe.local_verdict(None)
    assert "256 lines" in ll128_probe.summary(clean)


def test_the_ll128_region_index():
    assert _native.PROTOCOLS[ll128_probe.LL128_PROTOCOL] == "LL128"
