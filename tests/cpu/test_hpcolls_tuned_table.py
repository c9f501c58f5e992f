"""Tuned selection tables without a GPU: the rows' check (hpcolls._native.check_selection_rows and
the pure plan's selection_rows=), the plan honouring a communicator's own rows, the file
(hpcolls/tuned_table.py: round trip, the key, mismatched, stale, corrupt and invalid files
ignored with the reason), the choice agreed over a communicator, and info's lines."""
import json
import random
from types import SimpleNamespace

import pytest
from mpi4py import MPI

from hpcolls import dtypes, log, tuned_table
from hpcolls.tools import info

_native = pytest.importorskip("hpcolls._native", reason="the native module is not built")

MiB = 1 << 20
SENTINEL = dict(sentinel_half_bytes=16 * MiB)
ALLREDUCE, ALLGATHER, BCAST = 0, 1, 2


def builtin(collective, n):
    rows = [dict(r) for r in _native.selection_table() if r["collective"] == collective]
    return next((r for r in rows if n <= r["max_ranks"]), rows[-1])


def plan(nbytes, n, rows=None, **kw):
    kernel, _, _, _, piece, pieces, largest, _, protocol = _native.plan(
        nbytes, dtypes.F64, dtypes.SUM, n, kw.pop("half_bytes", 4 * MiB), kw.pop("max_blocks", 32),
        selection_rows=rows, **kw)
    return dict(kernel=kernel, protocol=protocol, piece=piece, pieces=pieces, largest=largest)


def key(**changes):
    k = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 1, "ranks_per_gpu": 2, "ranks": 2,
         "kernel_set": tuned_table.kernel_set(_native)}
    return {**k, **changes}


def a_row(n=2, **changes):
    # Random limits each run, kept consistent: ll_max below the one-shot limits, LL128 off.
    ll = random.choice([4, 8, 16, 32, 64]) << 10
    return {**builtin("allreduce", n), "max_ranks": n, "ll_max": ll, "ll_oneshot_max": 2 * ll,
            "sentinel_oneshot_max": 4 * ll, **changes}


# -- the rows' check ------------------------------------------------------------------------------

@pytest.mark.parametrize("change, field", [
    ({"ll_max": -1}, "ll_max"), ({"native_max_vs_nccl": 1.5}, "native_max_vs_nccl"),
    ({"ll_oneshot_max": True}, "ll_oneshot_max"), ({"ll128_max": "big"}, "ll128_max"),
    ({"collective": "alltoall"}, "collective"), ({"collective": 0}, "collective"),
    ({"max_ranks": 0}, "max_ranks"), ({"max_ranks": 33}, "max_ranks"), ({"max_ranks": None}, "max_ranks"),
    ({"surprise": 1}, "surprise"), ({"ll_max": 1 << 70}, "ll_max"), ({"ll128_max": 1024, "ll_max": 4096}, "ll128_max"),
])
def test_a_bad_row_is_a_value_error_naming_the_field(change, field):
    bad = {**a_row(), **change}
    for check in (_native.check_selection_rows, lambda rows: plan(8, 2, rows=rows)):
        with pytest.raises(ValueError, match=field):
            check([bad])


def test_missing_fields_duplicates_and_non_dicts_are_refused():
    row = a_row()
    del row["sentinel_oneshot_max"]
    with pytest.raises(ValueError, match="'sentinel_oneshot_max' missing"):
        _native.check_selection_rows([row])
    with pytest.raises(ValueError, match="max_ranks 2 does not exceed"):
        _native.check_selection_rows([a_row(), a_row()])
    with pytest.raises(ValueError, match="row 1: not a dict"):
        _native.check_selection_rows([a_row(), ("allreduce", 2)])


def test_good_rows_pass_and_the_builtin_table_is_a_valid_one():
    _native.check_selection_rows([])
    _native.check_selection_rows(None)
    _native.check_selection_rows([a_row(2), a_row(4), {**builtin("bcast", 2), "ll_max": None}])
    _native.check_selection_rows(_native.selection_table())


# -- the plan honours them --------------------------------------------------------------------------

def test_the_plan_reads_a_communicators_own_rows():
    row = a_row(2)
    ll, one = row["ll_max"], row["sentinel_oneshot_max"]
    assert plan(ll, 2, [row], **SENTINEL)["protocol"] == "LL"
    above = plan(ll + 16, 2, [row], **SENTINEL)
    assert above["protocol"] == "sentinel" and above["kernel"] == "one-shot (sentinel)"
    assert plan(one + 16, 2, [row], **SENTINEL)["kernel"] == "two-shot (sentinel)"
    # LL's own one-shot limit, where the call stays on LL (forced, or no sentinel region).
    assert plan(row["ll_oneshot_max"], 2, [row], protocol=0)["kernel"].startswith("one-shot")
    assert plan(row["ll_oneshot_max"] + 16, 2, [row], protocol=0)["kernel"] == "two-shot"
    # The same sizes under the built-in table choose as its row says (so the rows made a difference
    # wherever the two differ).
    base = builtin("allreduce", 2)
    assert plan(base["ll_max"] + 16, 2, **SENTINEL)["protocol"] == "sentinel"
    assert plan(max(ll, base["ll_max"]) + 16, 2, [{**row, "ll_max": 32 * MiB, "ll_oneshot_max": 32 * MiB}],
                **SENTINEL)["protocol"] == "LL"


def test_rows_replace_only_their_collective_and_rank_counts():
    row = {**builtin("allgather", 2), "max_ranks": 2, "ll_max": 0}
    assert plan(64, 2, [row], collective=ALLGATHER, **SENTINEL)["protocol"] == "sentinel"
    assert plan(64, 2, collective=ALLGATHER, **SENTINEL)["protocol"] == "LL"
    assert plan(64, 4, [row], collective=ALLGATHER, **SENTINEL)["protocol"] == "LL"  # 4 ranks: not covered
    assert plan(64, 2, [row], collective=BCAST, **SENTINEL)["protocol"] == "LL"      # another collective
    assert plan(64, 2, [row], **SENTINEL)["protocol"] == "LL"                        # Allreduce: built-in


def test_native_max_vs_nccl_of_the_rows_where_nccl_runs():
    limit = random.choice([256, 512, 1024]) << 10
    row = a_row(4, native_max_vs_nccl=limit)
    assert plan(limit, 4, [row], nccl_alternative=True, **SENTINEL)["pieces"] == 1
    past = plan(limit + 16, 4, [row], nccl_alternative=True, **SENTINEL)
    assert past["pieces"] > 1 and past["largest"] == limit
    assert plan(limit + 16, 4, [row], nccl_alternative=False, **SENTINEL)["pieces"] == 1  # pieces path: whole


# -- the file ---------------------------------------------------------------------------------------

def test_store_and_choose_round_trip(tmp_path):
    path = str(tmp_path / "sub" / "selection.json")
    rows = [a_row(2), {**builtin("bcast", 2), "max_ranks": 2, "ll_max": 4096}]
    entry = tuned_table.store(path, key(), rows, measured={"sizes": [8, 16]})
    chosen = tuned_table.choose(path, key(), _native.check_selection_rows)
    assert chosen.tuned and list(chosen.rows) == rows and chosen.path == path
    assert chosen.key == key() and chosen.date == entry["date"] and not chosen.warn
    assert "tuned, from" in chosen.describe() and entry["date"] in chosen.describe()
    with open(path) as f:
        assert json.load(f)["format"] == tuned_table.FORMAT


def test_several_keys_live_in_one_file_and_a_key_is_replaced(tmp_path):
    path = str(tmp_path / "selection.json")
    first, second = [a_row(2)], [a_row(4)]
    tuned_table.store(path, key(), first)
    tuned_table.store(path, key(ranks=4, ranks_per_gpu=4), second)
    assert list(tuned_table.choose(path, key(), _native.check_selection_rows).rows) == first
    assert list(tuned_table.choose(path, key(ranks=4, ranks_per_gpu=4), _native.check_selection_rows).rows) == second
    again = [a_row(2, ll_max=8192)]
    tuned_table.store(path, key(), again)
    entries, why = tuned_table.read_entries(path)
    assert why is None and len(entries) == 2
    assert list(tuned_table.choose(path, key(), _native.check_selection_rows).rows) == again


@pytest.mark.parametrize("field, other", [("gpu_model", "NVIDIA H200"), ("gpu_count", 2), ("ranks_per_gpu", 1),
                                          ("ranks", 4)])
def test_another_machine_or_rank_count_is_a_mismatch(tmp_path, field, other):
    path = str(tmp_path / "selection.json")
    tuned_table.store(path, key(), [a_row(2)])
    chosen = tuned_table.choose(path, key(**{field: other}), _native.check_selection_rows)
    assert not chosen.tuned and not chosen.warn and "no entry for" in chosen.reason and f"{field} {other}" in chosen.reason


def test_another_kernel_set_is_stale(tmp_path):
    path = str(tmp_path / "selection.json")
    tuned_table.store(path, key(kernel_set="hpcolls 0.0.1, 3 kernel variants, protocols LL"), [a_row(2)])
    chosen = tuned_table.choose(path, key(), _native.check_selection_rows)
    assert not chosen.tuned and chosen.warn and chosen.reason.split(": ", 1)[1].startswith("stale")
    assert "run python -m hpcolls tune again" in chosen.reason


@pytest.mark.parametrize("text, why", [("{not json", "unreadable"), ("[1, 2]", "not a tuned-table file"),
                                       ('{"format": 99, "entries": []}', "not a tuned-table file"),
                                       ('{"format": 1, "entries": [{"key": {}}]}', "entry 0 has no key or rows")])
def test_a_corrupt_file_is_ignored_with_the_reason(tmp_path, text, why):
    path = tmp_path / "selection.json"
    path.write_text(text)
    chosen = tuned_table.choose(str(path), key(), _native.check_selection_rows)
    assert not chosen.tuned and chosen.warn and why in chosen.reason
    tuned_table.store(str(path), key(), [a_row(2)])  # tune replaces such a file
    assert tuned_table.choose(str(path), key(), _native.check_selection_rows).tuned


def test_invalid_rows_in_the_file_are_ignored_naming_the_field(tmp_path):
    path = str(tmp_path / "selection.json")
    tuned_table.store(path, key(), [a_row(2, ll_max=-5)])
    chosen = tuned_table.choose(path, key(), _native.check_selection_rows)
    assert not chosen.tuned and chosen.warn and "ll_max" in chosen.reason and "not a table" in chosen.reason


def test_no_file_and_turned_off(tmp_path):
    chosen = tuned_table.choose(str(tmp_path / "none.json"), key(), _native.check_selection_rows)
    assert not chosen.tuned and not chosen.warn and "no tuned table at" in chosen.reason
    off = tuned_table.choose(None, key(), _native.check_selection_rows)
    assert not off.tuned and off.reason == "HPCOLLS_TUNE_FILE=none"


def test_where_the_file_is():
    assert tuned_table.store_path(env={"HPCOLLS_TUNE_FILE": "/x/t.json"}) == "/x/t.json"
    assert tuned_table.store_path(" /y/t.json ") == "/y/t.json"
    for off in ("none", "OFF", "0"):
        assert tuned_table.store_path(env={"HPCOLLS_TUNE_FILE": off}) is None and tuned_table.store_path(off) is None
    assert tuned_table.store_path(env={"XDG_CACHE_HOME": "/c"}) == "/c/hpcolls/selection.json"
    assert tuned_table.store_path("", env={"XDG_CACHE_HOME": "/c"}) == "/c/hpcolls/selection.json"
    assert tuned_table.store_path(env={}).endswith("/.cache/hpcolls/selection.json")


# -- agreed over a communicator, and logged ----------------------------------------------------------

def stand_in_native(model="NVIDIA H100 80GB HBM3"):
    """The parts of hpcolls._native that tuned_table reads, on a made-up GPU (its own check)."""
    return SimpleNamespace(device_info=lambda d: {"name": model, "uuid": "GPU-made-up"},
                           KERNEL_VARIANTS=_native.KERNEL_VARIANTS, PROTOCOLS=_native.PROTOCOLS,
                           check_selection_rows=_native.check_selection_rows)


def test_agreed_takes_the_matching_entry_and_logs_why_not(tmp_path, monkeypatch, capsys):
    path = str(tmp_path / "selection.json")
    monkeypatch.setattr(log, "level", log.LEVELS["INFO"])
    comm = MPI.COMM_SELF
    k = tuned_table.machine_key(comm, stand_in_native(), 0, 1)
    assert k == key(ranks=1, ranks_per_gpu=1)
    rows = [a_row(2)]
    tuned_table.store(path, k, rows)
    chosen = tuned_table.agreed(comm, stand_in_native(), 0, 1, path)
    assert chosen.tuned and list(chosen.rows) == rows
    assert "selection table: tuned, from" in capsys.readouterr().err
    other = tuned_table.agreed(comm, stand_in_native("NVIDIA H200"), 0, 1, path)
    assert not other.tuned and "selection table: built-in (" in capsys.readouterr().err
    with open(path, "w") as f:
        f.write("garbage")
    broken = tuned_table.agreed(comm, stand_in_native(), 0, 1, path)
    assert not broken.tuned
    err = capsys.readouterr().err
    assert "WARN selection table: built-in; the tuned one is ignored" in err and "unreadable" in err


# -- info -------------------------------------------------------------------------------------------

def test_info_says_which_table_and_where_from(tmp_path):
    path = str(tmp_path / "selection.json")
    rows = [a_row(2)]
    entry = tuned_table.store(path, key(), rows)
    chosen = tuned_table.choose(path, key(), _native.check_selection_rows)
    lines = info.table_lines(chosen)
    assert lines[0].startswith("selection table in force over COMM_WORLD: tuned, from " + path)
    assert entry["date"] in lines[0] and "ranks_per_gpu 2" in lines[0] and key()["kernel_set"] in lines[0]
    text = "\n".join(lines)
    assert f"allreduce <= 2 ranks: ll_max {rows[0]['ll_max']}," in text
    assert "built-in rows of the other collectives" in text and "bcast <= " in text
    assert "allreduce <= 4 ranks" not in text  # the tuned rows replace the built-in ones of allreduce
    plain = info.table_lines(tuned_table.InForce(reason="no tuned table at /nowhere"))
    assert plain[0] == "selection table in force over COMM_WORLD: the plan's built-in table (no tuned table at /nowhere)"
    assert len(plain) == 2 + len(_native.selection_table())
