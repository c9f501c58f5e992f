"""Where the native route sends a collective (hpcolls/routes/native.py), as far as plans, limits
and settings decide it without a GPU: the plans are the native layer's own pure function
(hpcolls._native.plan, native/include/hpcolls/plan.h); what NCCL answers is given, as the GPU
machine's NCCL would give it (set up or not, taking the type, op and counts or not)."""
import inspect
from dataclasses import replace

import pytest

from hpcolls import dtypes, methods
from hpcolls.routes.collectives import COLLECTIVES, DeviceCall
from hpcolls.routes.native import NATIVE_ORDER, past_native

_native = pytest.importorskip("hpcolls._native", reason="the native module is not built")

HALF = 4 << 20  # the default 8 MiB scratch, one half


def plan(collective, nbytes, nranks, code=dtypes.F64, op=dtypes.SUM, **kw):
    """(pieces, piece_bytes) of the native plan, as the route reads it."""
    found = _native.plan(nbytes, code, op, nranks, kw.pop("half_bytes", HALF), 32,
                         collective=NATIVE_ORDER.index(collective), **kw)
    return found[5], found[4]


def nccl_says(takes, why=None, asked=None):
    def answer():
        if asked is not None:
            asked.append(True)
        return takes, why
    return answer


def never_asked():
    raise AssertionError("NCCL was asked where HPCOLLS_ALGO leaves it out")


def test_the_route_knows_every_collective_as_the_native_layer_names_them():
    assert NATIVE_ORDER == _native.COLLECTIVES
    for name, collective in COLLECTIVES.items():
        assert collective.method == name and name in methods.METHODS
        assert collective.native in NATIVE_ORDER
        assert collective.reduces == (name not in ("Bcast", "Allgather"))


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "bcast", "reduce", "reduce_scatter"])
@pytest.mark.parametrize("nranks", [1, 2, 3, 8])
def test_within_the_limit_the_kernels_take_the_call_whole(collective, nranks):
    for nbytes in (1 if collective in ("bcast", "allgather") else 8, 4096, 4104, 64 << 10):
        assert plan(collective, nbytes, nranks)[0] == 1, nbytes


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "bcast", "reduce", "reduce_scatter"])
def test_past_the_limit_nccl_then_pieces(collective):
    big = plan(collective, 16 << 20, 4)
    assert big[0] > 1 and big[1] % 16 == 0
    asked = []
    assert past_native(big, 8, "auto", None, nccl_says(True, asked=asked)).route == "nccl" and asked
    pieces = past_native(big, 8, "auto", None, nccl_says(False, "several ranks share a GPU, which NCCL refuses"))
    assert pieces == ("pieces", pieces.why, big[1]) and "NCCL: several ranks share a GPU" in pieces.why
    native_why = pieces.why.split(";")[0]
    assert native_why == f"larger than the native kernels take in one call ({big[1]} B)"
    for algo in ("oneshot", "twoshot"):  # a forced native algorithm never asks NCCL
        assert past_native(big, 8, algo, None, never_asked) == ("pieces", f"{native_why}; HPCOLLS_ALGO={algo}", big[1])


def test_native_path_off():
    off = "ranks span several nodes (CUDA IPC reaches one node only)"
    assert past_native(None, 8, "auto", off, nccl_says(True)).route == "nccl"
    chosen = past_native(None, 8, "auto", off, nccl_says(False, "no float64 bxor"))
    assert chosen.route == "mpi" and off in chosen.why and "no float64 bxor" in chosen.why
    assert past_native(None, 8, "mpi", "HPCOLLS_ALGO=mpi", never_asked).route == "mpi"
    assert past_native(None, 8, "nccl", "HPCOLLS_ALGO=nccl", nccl_says(True)).route == "nccl"


def test_what_the_kernels_do_not_carry_is_never_cut_into_pieces():
    for collective in ("allreduce", "reduce", "reduce_scatter"):
        not_carried = plan(collective, 64, 4, dtypes.F64, dtypes.BAND)
        assert not_carried[0] == 0
        chosen = past_native(not_carried, 8, "auto", None, nccl_says(False, "no float64 band"))
        assert chosen.route == "mpi" and "not a call the native kernels carry" in chosen.why
    diagnostic = plan("bcast", 64, 4, ll_mode=1)  # the rooted kernels have no diagnostic LL variants
    assert diagnostic[0] == 0 and past_native(diagnostic, 1, "oneshot", None, never_asked).route == "mpi"
    tiny = plan("reduce", 16, 4, half_bytes=32 * 16 + 64)  # room for the handshakes and less than a chunk a rank
    assert tiny[0] == 0 and past_native(tiny, 8, "auto", None, nccl_says(False, "x")).route == "mpi"


def test_a_refusal_goes_to_nccl_or_mpi_at_any_size():
    why = "in place with a block larger than block 0"
    for size in (64, 64 << 20):
        p = plan("reduce_scatter", size, 4)
        assert past_native(p, 8, "auto", None, nccl_says(True), refusal=why).route == "nccl"
        chosen = past_native(p, 8, "auto", None, nccl_says(False, "counts differ per rank"), refusal=why)
        assert chosen.route == "mpi" and chosen.why.startswith(why)


def test_the_plan_is_about_the_largest_block_of_a_reduce_scatter():
    call = DeviceCall(0, 0, 7, dtypes.F32, dtypes.SUM, 0, counts=(3, 7, 0, 5))
    assert call.nbytes == 28 and call.displs == [0, 3, 10, 10]
    scatter = COLLECTIVES["Reduce_scatter"]
    assert scatter.host_result(call, 1) == (15, 3, 7, True)
    assert scatter.refusal(replace(call, in_place=True)) is not None
    assert scatter.refusal(replace(call, in_place=True, counts=(7, 7, 0, 5))) is None


def test_the_native_entries_take_each_collective_with_mpi4py_s_parameters():
    """native/hpcolls/fast_entry.cpp's table: one entry per collective the route carries, whose
    parameters are mpi4py's method's, in order, then hpcolls' `stream`, and whose required ones
    are those without a default."""
    assert set(_native.FAST_ENTRIES) == set(COLLECTIVES)
    for name, (params, required) in _native.FAST_ENTRIES.items():
        method = methods.METHODS[name]
        assert params == (*method.parameters, "stream"), name
        signature = inspect.signature(getattr(method.owner, name)).parameters.values()
        assert required == sum(p.default is inspect.Parameter.empty for p in signature) - 1, name  # less self


def test_info_gives_each_collective_its_route_from_the_settings_and_the_node_shape():
    """`python -m hpcolls info`'s route lines (routes/native.py, route_lines): over one node the
    native kernels for all six; over several, the four the hierarchy carries hierarchical (with
    Allreduce's scheme) and Reduce_scatter(_block) on NCCL or MPI; the flat routes only where the
    settings or the node shape leave no hierarchical path."""
    from hpcolls.config import Config
    from hpcolls.hierarchy import NodeHierarchy
    from hpcolls.routes.native import route_lines

    def layout(nodes):
        return NodeHierarchy("HPCOLLS_NODE_SIZE=2", nodes, 0, 0, None, None)

    def lines(nodes, aware=False, **settings):
        found = route_lines(layout(nodes), replace(Config.from_env(4), **settings), aware)
        return dict(line.split(": ", 1) for line in found) if len(found) > 1 else found

    one = lines([[0, 1, 2, 3]])
    assert list(one) == list(COLLECTIVES) and all(v.startswith("native kernels") for v in one.values())
    two = lines([[0, 1], [2, 3]])
    assert list(two) == list(COLLECTIVES)
    for name in ("Allreduce", "Bcast", "Reduce", "Allgather"):
        assert two[name].startswith("hierarchical"), name
    assert "leaders up to" in two["Allreduce"] and "slices above" in two["Allreduce"]
    for name in ("Reduce_scatter_block", "Reduce_scatter"):
        assert two[name].startswith("NCCL where every rank has its own GPU") and "MPI staged" in two[name], name
    assert "HPCOLLS_HIERARCHY" in lines([[0, 1], [2, 3]], hierarchy="slices")["Allreduce"]
    assert lines([[0, 2], [1, 3]])["Allgather"].startswith("NCCL")  # nodes not of consecutive ranks
    for settings, why in (({"hierarchy": "off"}, "HPCOLLS_HIERARCHY=off"), ({}, "unequal size")):
        flat = lines([[0, 1], [2, 3]] if settings else [[0, 1, 2], [3]], **settings)
        assert all(v.startswith("NCCL") and why in v for v in flat.values()), flat
    assert lines([[0, 1], [2, 3]], aware=True, algo="mpi") == ["every collective: MPI directly (CUDA-aware) "
                                                               "(HPCOLLS_ALGO=mpi)"]
