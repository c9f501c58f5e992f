"""The native layer's one plan function (native/include/hpcolls/plan.h), through
hpcolls._native.plan, a pure function: which kernel, grid, dependent launch and pieces a
call gets, and the limits that derive from it. No GPU needed."""
import pytest

from hpcolls import dtypes

_native = pytest.importorskip("hpcolls._native", reason="the native module is not built")

MiB = 1 << 20
SMALL = "one-shot (small-message kernel)"
HALF = 4 * MiB  # the default 8 MiB scratch, one half


def plan(nbytes, nranks, code=dtypes.F64, op=dtypes.SUM, **kw):
    kw.setdefault("max_blocks", 32)
    kernel, blocks, threads, dependent, piece, pieces, largest, small_max, protocol = _native.plan(
        nbytes, code, op, nranks, kw.pop("half_bytes", HALF), **kw)
    return dict(kernel=kernel, blocks=blocks, threads=threads, dependent=dependent, piece=piece, pieces=pieces,
                largest=largest, small_max=small_max, protocol=protocol)


def test_small_kernel_at_its_rank_counts_only():
    for n in (2, 4, 8):
        p = plan(8, n)
        assert p["kernel"] == "one-shot (small-message kernel)" and (p["blocks"], p["threads"]) == (1, 32)
        assert p["small_max"] == 32 * _native.SMALL_ONESHOT_BLOCK_BYTES
    for n in (1, 3, 5, 16):
        assert plan(8, n)["kernel"] == "one-shot" and plan(8, n)["small_max"] == 0


def test_small_kernel_up_to_a_block_per_4k_within_the_share():
    limit = 5 * _native.SMALL_ONESHOT_BLOCK_BYTES
    assert plan(limit, 2, max_blocks=5, oneshot_max_bytes=MiB)["kernel"] == "one-shot (small-message kernel)"
    assert plan(limit, 2, max_blocks=5, oneshot_max_bytes=MiB)["blocks"] == 5
    assert plan(limit + 8, 2, max_blocks=5, oneshot_max_bytes=MiB)["kernel"] == "one-shot"


def test_diagnosis_keeps_the_general_kernel():
    assert plan(8, 2, threads_override=64)["kernel"] == "one-shot"
    assert plan(8, 2, threads_override=64)["threads"] == 64
    assert plan(8, 2, ll_mode=1)["kernel"] == "one-shot"


def test_thresholds_and_forced_algorithms():
    assert plan(64 << 10, 4, oneshot_max_bytes=64 << 10)["kernel"].startswith("one-shot")
    assert plan((64 << 10) + 8, 4, oneshot_max_bytes=64 << 10)["kernel"] == "two-shot"
    assert plan(16 << 10, 4, algo=1)["kernel"] == "two-shot"
    assert plan(2 * MiB, 4, algo=0, oneshot_max_bytes=1)["kernel"] == "one-shot"  # forced: up to the scratch
    assert plan(2 * MiB, 1)["kernel"] == "one-shot"  # one rank: a copy, whatever the size


def test_pieces_past_the_largest_message():
    p = plan(3 * MiB + 5, 4, twoshot_max_bytes=MiB)
    assert p["largest"] == MiB and p["piece"] == MiB and p["pieces"] == 4 and p["kernel"] == "two-shot"
    whole = plan(MiB, 4, twoshot_max_bytes=MiB)
    assert whole["pieces"] == 1 and whole["piece"] == MiB
    assert all(plan(b, n)["largest"] % 16 == 0 for b in (1, 100) for n in (1, 2, 3, 8, 32))


def test_what_the_scratch_cannot_hold_is_not_native():
    p = plan(8, 32, half_bytes=512, algo=0)  # one-shot needs 32 slots x 32 bytes per chunk
    assert p["kernel"] == "" and p["pieces"] == 0 and p["largest"] == 0


def test_pairs_mpi_does_not_define_are_not_planned():
    for code, op in ((dtypes.F64, dtypes.BAND), (dtypes.BOOL, dtypes.SUM), (dtypes.C64, dtypes.MAX)):
        assert plan(8, 2, code, op)["pieces"] == 0
    for code in range(len(dtypes.NAMES)):
        for op in dtypes.OPS_OF[code]:
            assert plan(8, 2, code, op)["pieces"] == 1, (dtypes.NAMES[code], dtypes.OP_NAMES[op])


def test_dependent_launch_on_a_shared_gpu_only_for_half_the_share():
    assert plan(8, 2, dependent_launch=True, gpu_shared=True, max_blocks=8)["dependent"]
    big = 8 * _native.SMALL_ONESHOT_BLOCK_BYTES
    assert plan(big, 2, dependent_launch=True, gpu_shared=True, max_blocks=8)["blocks"] == 8
    assert not plan(big, 2, dependent_launch=True, gpu_shared=True, max_blocks=8)["dependent"]
    assert plan(big, 2, dependent_launch=True, gpu_shared=False, max_blocks=8)["dependent"]
    assert not plan(8, 2, dependent_launch=False)["dependent"]


def test_general_one_shot_gives_a_lane_per_rank():
    p = plan(64 * 16, 3)  # 64 chunks x 4 lanes (3 ranks rounded up to a power of two)
    assert p["kernel"] == "one-shot" and p["threads"] == 256 and p["blocks"] == 1
    assert plan(16, 3)["threads"] == 32


ALLGATHER = 1


def test_allgather_plan():
    assert _native.COLLECTIVES[ALLGATHER] == "allgather"
    p = plan(4096, 4, collective=ALLGATHER)  # the small-message kernel: 256 chunks, a thread each
    assert p["kernel"] == SMALL and p["pieces"] == 1 and (p["blocks"], p["threads"]) == (1, 256)
    assert p["largest"] == HALF // (4 * 32) * 16  # one-shot's scratch: a slot per rank, 2 lines per chunk
    general = plan(4096, 3, collective=ALLGATHER)  # the general kernel: 256 chunks x 3 ranks' blocks, a thread each
    assert general["kernel"] == "one-shot" and (general["blocks"], general["threads"]) == (3, 256)
    # Bytes, not elements: any type and op goes (none is looked at), one byte included.
    assert plan(1, 3, dtypes.BOOL, dtypes.SUM, collective=ALLGATHER)["pieces"] == 1
    big = plan(3 * p["largest"] + 1, 4, collective=ALLGATHER)
    assert big["pieces"] == 4 and big["piece"] == p["largest"] and big["kernel"] == "one-shot"
    assert plan(8, 4, ll_mode=2, collective=ALLGATHER)["pieces"] == 0  # no diagnostic variants
    with pytest.raises(ValueError, match="out of range"):
        plan(8, 4, collective=len(_native.COLLECTIVES))


BCAST, REDUCE, REDUCE_SCATTER = 2, 3, 4
HANDSHAKE_LINES = 32  # kMaxRanks lines before a rooted kernel's data (collective_args.h)


def test_rooted_collectives_are_named_in_order():
    assert _native.COLLECTIVES[BCAST:] == ("bcast", "reduce", "reduce_scatter")


def test_bcast_plan_moves_bytes_with_one_copy_of_the_message_in_scratch():
    small = plan(512, 4, collective=BCAST)  # the small-message kernel up to 512 B: 32 chunks, a thread each
    assert small["kernel"] == SMALL and small["pieces"] == 1 and (small["blocks"], small["threads"]) == (1, 32)
    assert plan(512, 3, collective=BCAST)["kernel"] == "one-shot"  # no small kernel at 3 ranks
    p = plan(4096, 4, collective=BCAST)  # past 512 B the general kernel: 256 chunks, a thread each
    assert p["kernel"] == "one-shot" and p["pieces"] == 1 and (p["blocks"], p["threads"]) == (1, 256)
    # The largest single call is the general kernel's: the handshake lines, then 2 lines a chunk.
    assert p["largest"] == (HALF // 16 - HANDSHAKE_LINES) // 2 * 16
    assert plan(1, 8, dtypes.BOOL, dtypes.SUM, collective=BCAST)["pieces"] == 1  # bytes: no type or op looked at
    assert plan(p["largest"], 4, collective=BCAST)["pieces"] == 1
    big = plan(p["largest"] + 1, 4, collective=BCAST)
    assert big["pieces"] == 2 and big["piece"] == p["largest"]
    assert plan(8, 4, ll_mode=1, collective=BCAST)["pieces"] == 0  # no diagnostic variants


def test_reduce_and_reduce_scatter_plan_a_slot_per_rank():
    for coll in (REDUCE, REDUCE_SCATTER):
        p = plan(4096, 4, collective=coll)
        assert p["kernel"] == SMALL and p["pieces"] == 1 and (p["blocks"], p["threads"]) == (1, 256)
        assert p["largest"] == (HALF // 16 - HANDSHAKE_LINES) // (4 * 2) * 16
        assert plan(p["largest"], 4, collective=coll)["pieces"] == 1
        assert plan(p["largest"] + 16, 4, collective=coll)["pieces"] == 2
        # Every (type, op) Allreduce takes, and only those: a pair MPI does not define gets no plan.
        assert plan(8, 4, dtypes.BOOL, dtypes.LXOR, collective=coll)["pieces"] == 1
        assert plan(8, 4, dtypes.F64, dtypes.BAND, collective=coll)["pieces"] == 0
        assert plan(8, 4, dtypes.C128, dtypes.MAX, collective=coll)["pieces"] == 0
        assert plan(8, 4, ll_mode=3, collective=coll)["pieces"] == 0


def test_reduce_reduce_scatter_and_allgather_take_the_small_kernel_where_allreduce_does():
    """At 2, 4 and 8 ranks, up to a block per 4 KiB within the rank's share of the SMs, a thread
    per chunk; other rank counts, larger messages and the diagnosis settings keep the general
    kernel (reduce_scatter/oneshot.cuh, allgather/oneshot.cuh)."""
    for coll in (REDUCE, REDUCE_SCATTER, ALLGATHER):
        for n in (2, 4, 8):
            p = plan(8, n, collective=coll)
            assert p["kernel"] == SMALL and (p["blocks"], p["threads"]) == (1, 32), (coll, n)
        for n in (1, 3, 5, 16):
            assert plan(8, n, collective=coll)["kernel"] == "one-shot", (coll, n)
        limit = 5 * _native.SMALL_ONESHOT_BLOCK_BYTES
        assert plan(limit, 2, max_blocks=5, collective=coll)["kernel"] == SMALL
        assert plan(limit, 2, max_blocks=5, collective=coll)["blocks"] == 5
        assert plan(limit + 8, 2, max_blocks=5, collective=coll)["kernel"] == "one-shot"
        assert plan(8, 2, threads_override=64, collective=coll)["kernel"] == "one-shot"


def test_rooted_grids_have_a_thread_per_rank_for_the_handshakes():
    for coll in (BCAST, REDUCE, REDUCE_SCATTER):
        assert plan(16, 32, collective=coll)["threads"] == 32  # one chunk, 32 ranks: 32 handshake threads
        assert plan(16, 1, collective=coll)["threads"] == 32
        assert plan(100 * 16, 3, collective=coll)["threads"] == 128  # 100 chunks, whole warps


def test_rooted_scratch_too_small_for_one_element():
    for coll in (BCAST, REDUCE, REDUCE_SCATTER):
        assert plan(8, 4, half_bytes=HANDSHAKE_LINES * 16, collective=coll)["pieces"] == 0


def test_the_selection_table_is_the_plans_and_config_reads_it():
    from hpcolls import config
    rows = _native.selection_table()
    assert rows and tuple(rows) == config.selection_table()
    assert {r["collective"] for r in rows} == set(_native.COLLECTIVES)
    for name in _native.COLLECTIVES:
        mine = [r["max_ranks"] for r in rows if r["collective"] == name]
        assert mine == sorted(mine) and mine[-1] == _native.MAX_RANKS, name
    for n in (1, 2, 3, 4, 8, 32):
        row = next(r for r in rows if r["collective"] == "allreduce" and n <= r["max_ranks"])
        assert config.thresholds(n) == (row["ll_oneshot_max"], row["native_max_vs_nccl"])
        # The table's LL one-shot limit is what an Allreduce on LL gets (a half large enough).
        limit = row["ll_oneshot_max"]
        if n > 1:
            assert plan(limit, n, half_bytes=64 * MiB)["kernel"].startswith("one-shot")
            assert plan(limit + 16, n, half_bytes=64 * MiB)["kernel"] == "two-shot"


def test_the_protocols_are_named_and_a_missing_region_keeps_ll():
    assert _native.PROTOCOLS == ("LL", "sentinel", "LL128")
    for coll in range(len(_native.COLLECTIVES)):
        assert plan(4096, 4, collective=coll)["protocol"] == "LL"
        for forced in (1, 2):  # no region (the inputs' default): the call stays on LL
            assert plan(4096, 4, collective=coll, protocol=forced)["protocol"] == "LL"
    with pytest.raises(ValueError, match="out of range"):
        plan(8, 4, protocol=3)


SENTINEL_HALF = 16 * MiB  # the default 32 MiB sentinel region, one half
SENTINEL = dict(sentinel_half_bytes=SENTINEL_HALF)


def sentinel_room(half=SENTINEL_HALF):
    """Payload chunks of one sentinel half (native/include/hpcolls/sentinel_layout.h): 32 handshake
    lines and 16 bytes of the escape area's rounding off, 24 bytes a chunk."""
    return (half - 32 * 16 - 16) // 24


def table_row(collective, n):
    return next(r for r in _native.selection_table() if r["collective"] == collective and n <= r["max_ranks"])


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_auto_keeps_ll_small_and_takes_sentinel_above_the_table(n):
    row = table_row("allreduce", n)
    assert plan(row["ll_max"], n, **SENTINEL)["protocol"] == "LL"
    above = plan(row["ll_max"] + 16, n, **SENTINEL)
    assert above["protocol"] == "sentinel" and above["kernel"] == "one-shot (sentinel)" and above["pieces"] == 1
    two = plan(row["sentinel_oneshot_max"] + 16, n, **SENTINEL)
    assert two["kernel"] == "two-shot (sentinel)" and two["protocol"] == "sentinel"
    for coll, name in ((ALLGATHER, "allgather"), (BCAST, "bcast")):
        limit = table_row(name, n)["ll_max"]
        assert plan(limit, n, collective=coll, **SENTINEL)["protocol"] == "LL"
        assert plan(limit + 1, n, collective=coll, **SENTINEL)["kernel"] == "one-shot (sentinel)"
    for coll in (REDUCE, REDUCE_SCATTER):  # no sentinel kernel: LL at every size
        assert plan(64 << 10, n, collective=coll, **SENTINEL)["protocol"] == "LL"


def test_a_forced_protocol_is_taken_where_a_kernel_carries_it():
    assert plan(8, 4, protocol=1, **SENTINEL)["kernel"] == "one-shot (sentinel)"
    assert plan(8, 4, protocol=1, algo=1, **SENTINEL)["kernel"] == "two-shot (sentinel)"
    assert plan(1, 4, protocol=1, collective=BCAST, **SENTINEL)["kernel"] == "one-shot (sentinel)"
    assert plan(1, 3, protocol=1, collective=ALLGATHER, **SENTINEL)["kernel"] == "one-shot (sentinel)"
    ll = plan(MiB, 4, protocol=0, **SENTINEL)
    assert ll["protocol"] == "LL" and ll["kernel"] == "two-shot"
    for coll in (REDUCE, REDUCE_SCATTER):
        assert plan(4096, 4, protocol=1, collective=coll, **SENTINEL)["protocol"] == "LL"
    assert plan(4096, 4, protocol=2, **SENTINEL)["protocol"] == "LL"  # LL128: no probe, no region here
    # The diagnosis settings ask for the LL kernels' variants: they keep LL.
    assert plan(MiB, 4, protocol=1, threads_override=64, **SENTINEL)["protocol"] == "LL"
    assert plan(MiB, 4, protocol=1, ll_mode=1, **SENTINEL)["protocol"] == "LL"


def test_sentinel_capacity_and_pieces_follow_the_region():
    room = sentinel_room()
    for n in (2, 3, 4, 8):
        one = plan(8, n, protocol=1, algo=0, **SENTINEL)["largest"]
        assert one == room // n * 16
        assert plan(one, n, protocol=1, algo=0, **SENTINEL)["pieces"] == 1
        assert plan(one + 16, n, protocol=1, algo=0, **SENTINEL)["pieces"] == 2
        two = plan(8, n, protocol=1, algo=1, **SENTINEL)["largest"]
        assert two == room // (2 * n) * n * 16
        p = plan(64 * MiB, n, **SENTINEL)  # auto, no NCCL: whole up to two-shot's room, then its pieces
        assert p["kernel"] == "two-shot (sentinel)" and p["piece"] == two == p["largest"]
        assert p["pieces"] == -(-64 * MiB // two)
        ag = plan(MiB, n, collective=ALLGATHER, **SENTINEL)
        assert ag["largest"] == room // n * 16 and ag["kernel"] == "one-shot (sentinel)"
        bc = plan(MiB, n, collective=BCAST, **SENTINEL)
        assert bc["largest"] == room * 16 and bc["kernel"] == "one-shot (sentinel)"


def test_where_nccl_runs_the_native_path_stops_at_the_table():
    limit = table_row("allreduce", 4)["native_max_vs_nccl"]
    assert plan(limit, 4, nccl_alternative=True, **SENTINEL)["pieces"] == 1
    past = plan(limit + 16, 4, nccl_alternative=True, **SENTINEL)
    assert past["pieces"] > 1 and past["largest"] == limit
    assert plan(limit + 16, 4, nccl_alternative=False, **SENTINEL)["pieces"] == 1  # the pieces path: whole
    ag = table_row("allgather", 4)["native_max_vs_nccl"]
    assert plan(ag + 1, 4, collective=ALLGATHER, nccl_alternative=True, half_bytes=1 << 30,
                sentinel_half_bytes=1 << 30)["pieces"] > 1


def test_sentinel_grids_give_a_thread_four_chunks():
    p = plan(1024 * 16, 4, protocol=1, algo=0, **SENTINEL)  # 1024 chunks, 4 per thread
    assert (p["blocks"], p["threads"]) == (1, 256)
    ag = plan(1024 * 16, 4, protocol=1, collective=ALLGATHER, **SENTINEL)  # 4 blocks of 1024 chunks
    assert (ag["blocks"], ag["threads"]) == (4, 256)
    bc = plan(16, 8, protocol=1, collective=BCAST, **SENTINEL)  # a thread per rank for the handshakes
    assert bc["threads"] == 32
