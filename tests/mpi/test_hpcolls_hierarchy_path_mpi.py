"""The hierarchical path on CPUs, under real MPI (hpcolls/hierarchy/path.py): its two Allreduce
schemes, Bcast, Reduce and Allgather, driven over emulated nodes (HPCOLLS_NODE_SIZE) with the node
steps on host memory (HostNodeSteps, the model of the native ones) and the real inter-node step
(bounded point-to-point MPI, host combine in node order). Every result is checked bitwise against
the host reference of the fixed hierarchy order and across ranks; a rank that skips a call is named
by every other rank, within two time-outs; the bounded exchanges and the notices that name the
missing rank are tested on their own. The same path on the GPU: tests/gpu/test_hpcolls_hierarchy_gpu.py."""
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

from hpcolls import dtypes, hierarchy
from hpcolls.config import Config
from hpcolls.errors import CollectiveTimeout, CommunicatorBroken
from hpcolls.hierarchy import HierarchicalPath
from hpcolls.hierarchy import model as hierarchy_model
from hpcolls.hierarchy.group_exchange import GroupExchange
from hpcolls.hierarchy.missing_rank import FailureChannel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from allreduce_cases import ALL_CODES, ALL_OPS, assert_bitwise, digest, host_input, supported  # noqa: E402

WORLD = MPI.COMM_WORLD
N, RANK = WORLD.Get_size(), WORLD.Get_rank()
# Node sizes giving at least two emulated nodes: 2 ranks -> 2 x 1; 4 ranks -> 4 x 1 and 2 x 2.
NODE_SIZES = [k for k in range(1, N) if N % k == 0]
pytestmark = pytest.mark.skipif(not NODE_SIZES, reason="a hierarchy needs at least two ranks")


def host_path(k, scheme="auto", timeout=5.0):
    cfg = dataclasses.replace(Config.from_env(N), node_size=k, hierarchy=scheme, timeout_s=timeout)
    return HierarchicalPath.on_host(WORLD, cfg)


@pytest.fixture(params=NODE_SIZES, ids=lambda k: f"{N // k}x{k}")
def k(request):
    return request.param


@pytest.fixture
def seed():
    return WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63))


def same_everywhere(result, what):
    assert len(set(WORLD.allgather(digest(result)))) == 1, f"{what}: ranks differ"


@pytest.mark.parametrize("scheme", ["leaders", "slices"])
def test_allreduce_every_type_and_op_in_the_hierarchy_order(k, scheme, seed):
    path = host_path(k, scheme)
    try:
        for code in ALL_CODES:
            for op in (o for o in ALL_OPS if supported(code, o)):
                for count in (1, 3 * k, 37):
                    inputs = [host_input(code, op, count, seed, r) for r in range(N)]
                    want = hierarchy.reduce_in_hierarchy_order(code, op, inputs, path.h.nodes)
                    for in_place in (False, True):
                        send = inputs[RANK].copy()
                        recv = send if in_place else np.full_like(send, 0x5A if send.dtype != np.bool_ else True)
                        assert path.allreduce(send.ctypes.data, recv.ctypes.data, count, code, op, 0)
                        what = f"{dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} x{count} {scheme} in_place={in_place}"
                        assert_bitwise(recv, want, what)
                        same_everywhere(recv, what)
                        if not in_place:
                            assert np.array_equal(send.view(np.uint8), inputs[RANK].view(np.uint8)), f"{what}: input written"
    finally:
        path.close()


def test_the_order_is_not_flat_rank_order_and_the_schemes_agree(k, seed):
    """Float32 sums whose flat rank-order result differs from the hierarchy's: both schemes give the
    hierarchy's, bit for bit (a scheme that reduced in rank order would fail here when k > 1)."""
    rng = np.random.default_rng(seed)
    count = 4 * k * 64
    inputs = [(rng.standard_normal(count) * 10.0 ** rng.integers(-7, 7, count)).astype(np.float32) for _ in range(N)]
    paths = {s: host_path(k, s) for s in ("leaders", "slices")}
    try:
        want = hierarchy.reduce_in_hierarchy_order(dtypes.F32, dtypes.SUM, inputs, paths["leaders"].h.nodes)
        for scheme, path in paths.items():
            got = np.zeros(count, np.float32)
            path.allreduce(inputs[RANK].ctypes.data, got.ctypes.data, count, dtypes.F32, dtypes.SUM, 0)
            assert got.tobytes() == want.tobytes(), scheme
        if 1 < k < N:
            flat = hierarchy.reduce_in_hierarchy_order(dtypes.F32, dtypes.SUM, inputs, [list(range(N))])
            assert flat.tobytes() != want.tobytes()
    finally:
        for path in paths.values():
            path.close()


def test_bcast_reduce_allgather_every_root(k, seed):
    path = host_path(k)
    try:
        for code, op in ((dtypes.F64, dtypes.SUM), (dtypes.C64, dtypes.PROD), (dtypes.BF16, dtypes.MAX),
                         (dtypes.I32, dtypes.BXOR), (dtypes.BOOL, dtypes.LOR)):
            count = 19
            inputs = [host_input(code, op, count, seed, r) for r in range(N)]
            want = hierarchy.reduce_in_hierarchy_order(code, op, inputs, path.h.nodes)
            for root in range(N):
                buf = inputs[root].copy() if RANK == root else np.zeros_like(inputs[root])
                assert path.bcast(buf.ctypes.data, buf.nbytes, root, 0)
                assert buf.tobytes() == inputs[root].tobytes(), f"bcast from {root}"
                send = inputs[RANK].copy()
                recv = np.zeros_like(send)
                assert path.reduce(send.ctypes.data, recv.ctypes.data, count, code, op, root, 0)
                if RANK == root:
                    assert_bitwise(recv, want, f"reduce {dtypes.NAMES[code]} to {root}")
                else:
                    assert not recv.any(), "reduce wrote a non-root's receive buffer"
                assert send.tobytes() == inputs[RANK].tobytes(), "reduce wrote its input"
            gathered = np.zeros(N * count, inputs[0].dtype)
            assert path.allgather(inputs[RANK].ctypes.data, gathered.ctypes.data, inputs[RANK].nbytes, 0)
            assert gathered.tobytes() == np.concatenate(inputs).tobytes()
            in_place = np.zeros_like(gathered)
            in_place[RANK * count:(RANK + 1) * count] = inputs[RANK]
            assert path.allgather(None, in_place.ctypes.data, inputs[RANK].nbytes, 0)
            assert in_place.tobytes() == gathered.tobytes()
    finally:
        path.close()


def test_forced_slices_take_leaders_where_the_count_does_not_divide(k):
    path = host_path(k, "slices")
    try:
        assert path.allreduce_scheme(4 * k, dtypes.F64) == "slices"
        assert path.allreduce_scheme(4 * k + 1, dtypes.F64) == ("leaders" if k > 1 else "slices")
    finally:
        path.close()


def test_the_model_chooses_by_size_and_a_measured_table_overrides_it(monkeypatch):
    for nodes, k in ((2, 2), (2, 4), (4, 2), (8, 8)):
        limit = hierarchy_model.leaders_max_bytes(nodes, k)
        assert 8 <= limit < 1 << 20, (nodes, k, limit)
        assert hierarchy_model.choose(8 * k, k, nodes, k) == "leaders"
        assert hierarchy_model.choose(1 << 20, 1 << 17, nodes, k) == "slices"
        assert hierarchy_model.choose(1 << 20, (1 << 17) + 1, nodes, k) == "leaders"  # slices need k | count
        model = hierarchy_model.MODEL
        assert model.leaders_us(16, nodes, k) <= model.slices_us(16, nodes, k)
    assert hierarchy_model.choose(1 << 20, 1 << 17, 2, 1) == "leaders"  # one rank per node: no slices
    monkeypatch.setitem(hierarchy_model.MEASURED_LEADERS_MAX_BYTES, (2, 4), 1 << 21)
    assert hierarchy_model.choose(1 << 20, 1 << 17, 2, 4) == "leaders"


CALLS = {
    "allreduce-leaders": ("leaders", lambda p, x, y: p.allreduce(x.ctypes.data, y.ctypes.data, x.size,
                                                                  dtypes.F64, dtypes.SUM, 0)),
    "allreduce-slices": ("slices", lambda p, x, y: p.allreduce(x.ctypes.data, y.ctypes.data, x.size,
                                                                dtypes.F64, dtypes.SUM, 0)),
    "bcast-root0": ("auto", lambda p, x, y: p.bcast(x.ctypes.data, x.nbytes, 0, 0)),
    "reduce-root0": ("auto", lambda p, x, y: p.reduce(x.ctypes.data, y.ctypes.data, x.size, dtypes.F64,
                                                       dtypes.MAX, 0, 0)),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_rank_that_skips_a_call_is_named_on_every_rank(k, call):
    """The last rank, and the leader of the last node, skip one call in turn. Every rank that
    depends on it raises CollectiveTimeout naming it within two time-outs (in an Allreduce: every
    rank); a rank whose part did not need it (a Bcast's receivers on other nodes) finishes that
    call and names it at its check(). Later calls raise CommunicatorBroken."""
    scheme, make_call = CALLS[call]
    timeout = 0.25
    for victim in sorted({N - 1, N - k}):
        path = host_path(k, scheme, timeout)
        x, y = np.arange(4.0 * k), np.zeros(4 * k)
        make_call(path, x, y)  # one call that every rank makes
        WORLD.Barrier()
        if RANK != victim:
            start = time.monotonic()
            try:
                make_call(path, x, y)
                assert not call.startswith("allreduce"), f"rank {RANK} finished an Allreduce without rank {victim}"
                while time.monotonic() - start < 2 * timeout + 2.0:
                    path.check()
                    time.sleep(0.01)
                raise AssertionError(f"rank {RANK} never learnt that rank {victim} missed the call")
            except CollectiveTimeout as raised:
                assert f"rank {victim} is missing" in str(raised), str(raised)
            assert time.monotonic() - start < 2 * timeout + 2.0
            with pytest.raises(CommunicatorBroken, match=f"rank {victim} is missing"):
                make_call(path, x, y)
        WORLD.Barrier()
        path.close()


def test_the_exchanges_send_bytes_whatever_the_element_type(seed):
    """The inter-node steps move bytes: an element type no MPI knows goes through (the GPU
    machine's Open MPI 4.1 has no float16 and refused the hierarchy's float16 exchanges)."""
    failures = FailureChannel(WORLD)
    try:
        group = GroupExchange(WORLD, range(N), failures, 5.0, "the test group")
        unknown = np.dtype("V7")                      # 7-byte opaque elements
        mine = np.random.default_rng(seed + RANK).integers(0, 256, 5 * 7, np.uint8).view(unknown)
        out = np.zeros((N, 5), unknown)
        group.allgather(mine, out)
        gathered = WORLD.allgather(mine.tobytes())
        assert [row.tobytes() for row in out] == gathered
    finally:
        failures.free()


def test_notices_are_followed_to_the_rank_that_never_came():
    """Ranks 0..N-2 gave up waiting along a chain that ends at rank N-1, which posts nothing: each
    follows the others' notices to N-1 (rank r waited for r+1)."""
    failures = FailureChannel(WORLD)
    try:
        if RANK < N - 1:
            missing, followed, named_me = failures.resolve(7, [RANK + 1], "a test step", grace_s=0.5)
            assert missing == [N - 1]
            assert [n.observer for n in followed] == list(range(RANK + 1, N - 1))
            assert named_me == ([RANK - 1] if RANK > 0 else [])
        deadline = time.monotonic() + 5.0  # rank 0's notice reaches every rank (rank 0 keeps its own)
        while failures.failed(7) is None and time.monotonic() < deadline:
            time.sleep(1e-3)
        assert failures.failed(7) is not None and failures.failed(6) is None
    finally:
        WORLD.Barrier()
        failures.free()


@pytest.fixture
def pretend_device(monkeypatch):
    """Host arrays that hpcolls is told are device memory, with the native module's copies as
    memmove and an MPI that is not CUDA-aware (as tests/mpi/test_hpcolls_routes_mpi_staged_mpi.py does)."""
    import ctypes
    import types

    import hpcolls
    from hpcolls import buffers
    from hpcolls.staging import cuda_aware
    from pretend_device import PretendDevice
    native = types.SimpleNamespace(stream_is_capturing=lambda s: False, stream_synchronize=lambda s: None,
                                   memcpy=lambda dst, src, n, s: ctypes.memmove(dst, src, n),
                                   device_info=lambda d: {"uuid": "pretend"})  # NCCL asks; it refuses a shared GPU
    monkeypatch.setitem(sys.modules, "hpcolls._native", native)
    monkeypatch.setattr(hpcolls, "_native", native, raising=False)
    monkeypatch.setattr(buffers, "_pointer_is_device", lambda ptr: (True, 0))
    monkeypatch.setenv("HPCOLLS_MPI_CUDA_AWARE", "0")
    cuda_aware.cache_clear()
    yield PretendDevice
    cuda_aware.cache_clear()


@pytest.fixture
def routed(monkeypatch, k, pretend_device):
    """COMM_WORLD wrapped on emulated nodes of k ranks, its hierarchical path's node steps on the
    host model: what runs for real is the routing, from hpcolls.Communicator's methods through
    hpcolls.routes' one decision (routes/native.py) to the hierarchical path, and the path."""
    import hpcolls
    from hpcolls import device_paths
    monkeypatch.setenv("HPCOLLS_NODE_SIZE", str(k))

    def never(*args):
        raise AssertionError("CUDA IPC (the flat native path) opened across emulated nodes")

    def on_host(comm, cfg, nodes, device):
        nodes.free()
        return HierarchicalPath.on_host(comm, cfg), "the host model"
    monkeypatch.setattr(device_paths, "open_native", never)
    monkeypatch.setattr(device_paths, "open_path", on_host)
    comm = hpcolls.wrap(WORLD)
    yield comm, pretend_device
    comm.close()


def test_the_communicators_methods_reach_the_hierarchical_path(routed, seed):
    comm, PretendDevice = routed
    for dtype, op in ((np.float64, MPI.SUM), (np.float16, MPI.MAX), (np.int32, MPI.BXOR)):
        code, opc = dtypes.code_of_numpy(dtype), dtypes.op_code(op)
        inputs = [host_input(code, opc, 12, seed, r) for r in range(N)]
        out = PretendDevice(np.zeros(12, dtype))
        comm.Allreduce(PretendDevice(inputs[RANK].copy()), out, op=op)
        calls = comm._paths.hierarchy.calls
        want = hierarchy.reduce_in_hierarchy_order(code, opc, inputs, comm._paths.hierarchy.h.nodes)
        assert_bitwise(out.memory, want, f"Allreduce {np.dtype(dtype).name}")
        in_place = PretendDevice(inputs[RANK].copy())
        comm.Allreduce(MPI.IN_PLACE, in_place, op=op)
        assert_bitwise(in_place.memory, want, f"Allreduce in place {np.dtype(dtype).name}")
        for root in range(N):
            buf = PretendDevice(inputs[root].copy() if RANK == root else np.zeros(12, dtype))
            comm.Bcast(buf, root=root)
            assert buf.memory.tobytes() == inputs[root].tobytes()
            got = PretendDevice(np.zeros(12, dtype)) if RANK == root else None
            comm.Reduce(PretendDevice(inputs[RANK].copy()), got, op=op, root=root)
            if RANK == root:
                assert_bitwise(got.memory, want, f"Reduce to {root}")
        gathered = PretendDevice(np.zeros(12 * N, dtype))
        comm.Allgather(PretendDevice(inputs[RANK].copy()), gathered)
        assert gathered.memory.tobytes() == np.concatenate(inputs).tobytes()
        in_place = PretendDevice(np.zeros(12 * N, dtype))
        in_place.memory[RANK * 12:(RANK + 1) * 12] = inputs[RANK]
        comm.Allgather(MPI.IN_PLACE, in_place)
        assert in_place.memory.tobytes() == np.concatenate(inputs).tobytes()
        assert comm._paths.hierarchy.calls == calls + 1 + 2 * N + 2, "a call went past the hierarchical path"
    assert comm._paths.native is None and comm.native_path == "the host model"


def test_reduce_scatter_takes_the_flat_routes_and_nothing_bypasses_the_path(routed, seed):
    """The one decision (routes/native.py, `choice`) sends the four collectives the hierarchy
    carries to it and Reduce_scatter(_block) to the flat routes (NCCL where every rank has its own
    GPU, else MPI: staged here); the flat native path is never opened, so no native entry
    (fast_entry.cpp) is installed on the instance to bypass the route."""
    from hpcolls.routes.collectives import COLLECTIVES
    from hpcolls.routes.native import route_of
    comm, PretendDevice = routed
    x, y = PretendDevice(np.arange(4.0 * N)), PretendDevice(np.zeros(4 * N))
    comm.Allreduce(x, y)  # opens the device paths (collective)
    for name, args in {"Allreduce": (x, y), "Bcast": (y,), "Reduce": (x, y), "Allgather": (PretendDevice(np.zeros(4)), y)}.items():
        chosen = route_of(comm, name, *args)
        spans = f"span {comm._paths.hierarchy.h.describe()}"
        assert chosen.route == "hierarchical" and spans in chosen.why, (name, chosen)
    assert "leaders" in route_of(comm, "Allreduce", x, y).why
    calls = comm._paths.hierarchy.calls
    inputs = [host_input(dtypes.I64, dtypes.SUM, 3 * N, seed, r) for r in range(N)]
    want = np.sum(inputs, axis=0)  # integers: exact in MPI's order too
    for name, args in {"Reduce_scatter_block": (), "Reduce_scatter": ([3] * N,)}.items():
        chosen = route_of(comm, name, PretendDevice(inputs[RANK].copy()), PretendDevice(np.zeros(3, np.int64)), *args)
        assert chosen.route == "mpi" and "the hierarchical path carries Allreduce, Bcast, Reduce and Allgather only" \
            in chosen.why, (name, chosen)
        got = PretendDevice(np.full(3, -1, np.int64))
        getattr(comm, name)(PretendDevice(inputs[RANK].copy()), got, *args)
        assert np.array_equal(got.memory, want[3 * RANK:3 * RANK + 3]), name
    assert comm._paths.hierarchy.calls == calls, "Reduce_scatter went through the hierarchical path"
    assert comm._paths.native is None
    assert not set(COLLECTIVES) & set(vars(comm)), "a native entry shadows a method of a communicator over nodes"


def test_past_the_node_kernels_the_flat_routes_take_over(routed, monkeypatch):
    """A message larger than the node kernels take goes to NCCL or MPI over all ranks (never in
    pieces: there is no flat native path to cut it for), and is logged with why."""
    from hpcolls import log
    from hpcolls.routes.native import route_of
    comm, PretendDevice = routed
    x = PretendDevice(np.arange(64.0) + RANK)
    comm.Allreduce(MPI.IN_PLACE, x)
    monkeypatch.setattr(comm._paths.hierarchy.node, "largest", lambda collective: 256)
    calls = comm._paths.hierarchy.calls
    big = PretendDevice(np.arange(64.0) + RANK)
    chosen = route_of(comm, "Allreduce", MPI.IN_PLACE, big)
    assert chosen.route == "mpi" and "more than the node kernels take" in chosen.why, chosen
    said = []
    monkeypatch.setattr(log, "level", 2)
    monkeypatch.setattr(log, "info_once", lambda key, text: said.append(text))
    comm.Allreduce(MPI.IN_PLACE, big)
    comm.Bcast(big, root=0)
    assert comm._paths.hierarchy.calls == calls
    assert np.array_equal(big.memory, np.arange(64.0) * N + sum(range(N)))
    assert any(t.startswith("Allreduce 512 B float64 sum: mpi (ranks span") for t in said), said
    small = PretendDevice(np.arange(4.0))
    comm.Allreduce(MPI.IN_PLACE, small)
    assert any(t.startswith("Allreduce 32 B float64 sum: hierarchical (leaders") for t in said), said


def test_a_call_mpi4py_would_refuse_raises_type_error(routed):
    """The native route reads the arguments itself (they never reach mpi4py there), so it refuses
    what mpi4py's method would: too many positional arguments (`stream` is keyword-only), an
    unknown keyword, a parameter given twice, a required one missing; on every rank alike, with
    nothing launched."""
    comm, PretendDevice = routed
    x, y = PretendDevice(np.arange(4.0 * N)), PretendDevice(np.zeros(4 * N))
    comm.Allreduce(x, y)  # opens the device paths (collective)
    calls = comm._paths.hierarchy.calls
    bad = {"stream by position": lambda: comm.Allreduce(x, y, MPI.SUM, None),
           "an unknown keyword": lambda: comm.Allreduce(x, y, opp=MPI.SUM),
           "op twice": lambda: comm.Allreduce(x, y, MPI.SUM, op=MPI.SUM),
           "no recvbuf": lambda: comm.Reduce(x, op=MPI.SUM),
           "root by position and keyword": lambda: comm.Bcast(y, 0, root=0),
           "Allgather with an op": lambda: comm.Allgather(x, y, MPI.SUM)}
    for what, call in bad.items():
        with pytest.raises(TypeError):
            call()
            pytest.fail(f"{what}: taken")
    assert comm._paths.hierarchy.calls == calls, "a refused call reached the hierarchical path"
