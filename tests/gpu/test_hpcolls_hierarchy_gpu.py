"""The hierarchical path on the GPU machine (hpcolls/hierarchy/path.py): the world's ranks on
emulated nodes (HPCOLLS_NODE_SIZE=k, every k that gives two nodes or more, or the one the
environment sets), all on one GPU under MPS, so that the native kernels run inside each node and
bounded MPI messages between the nodes, never CUDA IPC. Every type x op of both Allreduce schemes
and of Reduce against the host reference of the hierarchy's fixed order, bitwise and equal on every
rank, Bcast and Allgather of every type; the four through the communicator at every root; a
message past the node kernels and Reduce_scatter left to the flat routes, no native entry
installed over the nodes; a CUDA graph of the four replayed HPCOLLS_TEST_GRAPH_REPLAYS times
(default 1,000; the steps between the nodes become host nodes); a random mix of all four against
references; a rank skipping a call, or a graph replay, named on every other rank; the bench's
hierarchical rows.

    bash tests/gpu_harness.sh --no-build --ranks "4 8" -- -k hierarchy

covers 4 x 1 and 2 x 2 at 4 ranks, 8 x 1, 4 x 2 and 2 x 4 at 8. HPCOLLS_TEST_STRESS_CALLS (default
2,000) sets the random mix's length."""
import os
import time

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from hpcolls import dtypes, hierarchy, settings

from allreduce_cases import ALL_CODES, ALL_OPS, assert_bitwise, digest, host_input, supported

cupy = pytest.importorskip("cupy")
WORLD = MPI.COMM_WORLD
N, RANK = WORLD.size, WORLD.rank
STRESS_CALLS = int(os.environ.get("HPCOLLS_TEST_STRESS_CALLS", "2000"))
GRAPH_REPLAYS = int(os.environ.get("HPCOLLS_TEST_GRAPH_REPLAYS", "1000"))
_set = settings.get("HPCOLLS_NODE_SIZE")
NODE_SIZES = [_set] if _set and N % _set == 0 and N // _set >= 2 else [k for k in range(1, N) if N % k == 0]
pytestmark = pytest.mark.skipif(not NODE_SIZES, reason="emulated nodes need at least two ranks")


def emulated(k, scheme="auto", timeout=None):
    """A communicator over the world on emulated nodes of k ranks, its device paths opened."""
    with settings.overridden({"HPCOLLS_NODE_SIZE": str(k), "HPCOLLS_HIERARCHY": scheme}):
        comm = hpcolls.Communicator(WORLD, timeout=timeout)
        comm.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)  # reads the settings and opens the paths
    comm.synchronize()
    return comm


@pytest.fixture(params=NODE_SIZES, ids=lambda k: f"{N // k}x{k}")
def k(request, gpu):
    return request.param


@pytest.fixture(scope="module")
def seed():
    return WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63), root=0)


def finish(comm):
    cupy.cuda.get_current_stream().synchronize()
    comm.synchronize()


def same_everywhere(got, what):
    assert len(set(WORLD.allgather(digest(got)))) == 1, f"{what}: ranks differ"


def test_emulated_nodes_take_the_hierarchy_never_ipc_between_them(k):
    """The flat native path is never opened over the nodes, so no native entry (fast_entry.cpp)
    is installed to bypass the route; the route's one decision sends the four collectives the
    hierarchy carries to it."""
    from hpcolls.routes.collectives import COLLECTIVES
    from hpcolls.routes.native import route_of
    comm = emulated(k)
    try:
        assert comm._paths.native is None, "the flat native path (CUDA IPC over every rank) is open"
        assert comm._paths.hierarchy is not None, comm.native_path
        assert comm._paths.hierarchy.node.nc.nranks == k  # the native kernels span one emulated node only
        assert comm._paths.hierarchy.h.nodes == [list(range(s, s + k)) for s in range(0, N, k)]
        assert "hierarchical path" in comm.native_path
        assert not set(COLLECTIVES) & set(vars(comm)), "a native entry shadows a method of a communicator over nodes"
        x, y = cupy.ones(4 * N), cupy.zeros(4 * N)
        for name, args in {"Allreduce": (x, y), "Bcast": (y,), "Reduce": (x, y), "Allgather": (x[:4], y)}.items():
            assert route_of(comm, name, *args).route == "hierarchical", name
        for name in ("Reduce_scatter_block", "Reduce_scatter"):
            assert route_of(comm, name, x, y[:4], *([[4] * N] if name == "Reduce_scatter" else [])).route == "mpi"
    finally:
        comm.close()


def test_reduce_scatter_takes_the_flat_routes(k, seed):
    """Reduce_scatter(_block) on a communicator over nodes: MPI over all ranks (NCCL refuses ranks
    sharing a GPU), the hierarchical path untouched; integer data, exact in MPI's order."""
    comm = emulated(k)
    try:
        calls = comm._paths.hierarchy.calls
        inputs = [host_input(dtypes.I64, dtypes.SUM, 5 * N, seed, r) for r in range(N)]
        want = np.sum(inputs, axis=0)[5 * RANK:5 * RANK + 5]
        for name, extra in (("Reduce_scatter_block", ()), ("Reduce_scatter", ([5] * N,))):
            got = cupy.full(5, -1, cupy.int64)
            getattr(comm, name)(cupy.asarray(inputs[RANK]), got, *extra)
            finish(comm)
            assert np.array_equal(cupy.asnumpy(got), want), name
        assert comm._paths.hierarchy.calls == calls
    finally:
        comm.close()


@pytest.mark.parametrize("scheme", ["leaders", "slices"])
def test_allreduce_every_type_and_op_bitwise_in_the_hierarchy_order(k, scheme, seed):
    comm = emulated(k, scheme)
    path = comm._paths.hierarchy
    stream = cupy.cuda.get_current_stream().ptr
    try:
        for code in ALL_CODES:
            for op in (o for o in ALL_OPS if supported(code, o)):
                for count in (1, 8 * k, 1000 * k + (3 if scheme == "leaders" else 0)):
                    inputs = [host_input(code, op, count, seed, r) for r in range(N)]
                    want = hierarchy.reduce_in_hierarchy_order(code, op, inputs, path.h.nodes)
                    for in_place in (False, True):
                        send = cupy.asarray(inputs[RANK])
                        recv = send if in_place else cupy.empty_like(send)
                        if not in_place:
                            recv.view(cupy.uint8).fill(0xA5)
                        assert path.allreduce(send.data.ptr, recv.data.ptr, count, code, op, stream)
                        finish(comm)
                        what = f"{dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} x{count} {scheme} in_place={in_place}"
                        got = cupy.asnumpy(recv)
                        assert_bitwise(got, want, what)
                        same_everywhere(got, what)
                        if not in_place:
                            assert cupy.asnumpy(send).tobytes() == inputs[RANK].tobytes(), f"{what}: input written"
    finally:
        comm.close()


def test_reduce_bcast_allgather_every_type_and_op(k, seed):
    """The path's Reduce for every type x op (the root moving with the case), Bcast and Allgather
    for every type, bitwise; a non-root's receive buffer untouched."""
    comm = emulated(k)
    path = comm._paths.hierarchy
    stream = cupy.cuda.get_current_stream().ptr
    try:
        case = 0
        for code in ALL_CODES:
            count = 8 * k + 5
            for op in (o for o in ALL_OPS if supported(code, o)):
                root, case = case % N, case + 1
                inputs = [host_input(code, op, count, seed, r) for r in range(N)]
                want = hierarchy.reduce_in_hierarchy_order(code, op, inputs, path.h.nodes)
                send, recv = cupy.asarray(inputs[RANK]), cupy.asarray(inputs[RANK])
                recv.view(cupy.uint8).fill(0xA5)
                assert path.reduce(send.data.ptr, recv.data.ptr, count, code, op, root, stream)
                finish(comm)
                got = cupy.asnumpy(recv)
                what = f"reduce {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} to {root}"
                if RANK == root:
                    assert_bitwise(got, want, what)
                else:
                    assert not np.any(got.view(np.uint8) != 0xA5), f"{what}: a non-root's buffer written"
            buf = cupy.asarray(inputs[root]) if RANK == root else cupy.zeros_like(send)
            assert path.bcast(buf.data.ptr, buf.nbytes, root, stream)
            gathered = cupy.zeros(N * count, send.dtype)
            assert path.allgather(send.data.ptr, gathered.data.ptr, send.nbytes, stream)
            finish(comm)
            assert cupy.asnumpy(buf).tobytes() == inputs[root].tobytes(), f"bcast {dtypes.NAMES[code]}"
            assert cupy.asnumpy(gathered).tobytes() == np.concatenate(inputs).tobytes(), f"allgather {dtypes.NAMES[code]}"
    finally:
        comm.close()


def test_collectives_through_the_communicator_every_root(k, seed):
    comm = emulated(k)
    try:
        for dtype, op in ((np.float64, MPI.SUM), (np.float32, MPI.MAX), (np.int64, MPI.BXOR), (np.complex128, MPI.PROD)):
            code, opc = dtypes.code_of_numpy(dtype), dtypes.op_code(op)
            for count in (1, 24 * k, 5000):
                inputs = [host_input(code, opc, count, seed, r) for r in range(N)]
                want = hierarchy.reduce_in_hierarchy_order(code, opc, inputs, comm._paths.hierarchy.h.nodes)
                x = cupy.asarray(inputs[RANK])
                y = cupy.full_like(x, 7)
                comm.Allreduce(x, y, op=op)
                finish(comm)
                assert_bitwise(cupy.asnumpy(y), want, f"Allreduce {np.dtype(dtype).name} x{count}")
                for root in range(N):
                    buf = cupy.asarray(inputs[root]) if RANK == root else cupy.zeros_like(x)
                    comm.Bcast(buf, root=root)
                    finish(comm)
                    assert cupy.asnumpy(buf).tobytes() == inputs[root].tobytes(), f"Bcast from {root}"
                    out = cupy.full_like(x, 7) if RANK == root else None
                    comm.Reduce(x, out, op=op, root=root)
                    finish(comm)
                    if RANK == root:
                        assert_bitwise(cupy.asnumpy(out), want, f"Reduce to {root}")
                    in_place = cupy.asarray(inputs[RANK])
                    comm.Reduce(MPI.IN_PLACE if RANK == root else in_place, in_place if RANK == root else None,
                                op=op, root=root)
                    finish(comm)
                    if RANK == root:
                        assert_bitwise(cupy.asnumpy(in_place), want, f"Reduce in place to {root}")
                gathered = cupy.zeros(N * count, dtype)
                comm.Allgather(x, gathered)
                finish(comm)
                assert cupy.asnumpy(gathered).tobytes() == np.concatenate(inputs).tobytes()
        assert comm._paths.hierarchy.calls > 0
    finally:
        comm.close()


def test_past_the_node_kernels_the_flat_routes_take_over(k, seed):
    comm = emulated(k)
    try:
        node = comm._paths.hierarchy.node
        largest = max(node.largest("reduce"), node.largest("bcast"),
                      k * min(node.largest("reduce_scatter"), node.largest("allgather")))
        count = largest // 8 + 1024 * k  # past both schemes
        x = cupy.arange(count, dtype=cupy.int64) + RANK
        calls = comm._paths.hierarchy.calls
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        finish(comm)
        assert comm._paths.hierarchy.calls == calls, \
            "the hierarchical path took a message its node kernels cannot carry"
        assert np.array_equal(cupy.asnumpy(x), np.arange(count) * N + sum(range(N)))
    finally:
        comm.close()


@pytest.mark.parametrize("scheme", ["leaders", "slices"])
def test_a_graph_of_the_hierarchical_collectives_replayed(k, scheme, seed):
    """Allreduce, Reduce to the last rank, Bcast from the first and Allgather (float64, SUM)
    captured through the communicator on a stream of the caller's, the host steps between the nodes
    becoming host nodes (hpcolls/hierarchy/host_steps.py); replayed GRAPH_REPLAYS times with fresh random
    inputs copied in and the outputs poisoned before each replay, every result then against the
    hierarchy's order, bitwise and the same on every rank; an eager call after it still in step."""
    comm = emulated(k, scheme)
    count, last = 24 * k, N - 1
    x, summed, reduced = cupy.zeros(count), cupy.zeros(count), cupy.zeros(count)
    b, gathered = cupy.zeros(count), cupy.zeros(N * count)
    stream = cupy.cuda.Stream(non_blocking=True)
    try:
        calls = comm._paths.hierarchy.calls
        with stream:
            stream.begin_capture()
            comm.Allreduce(x, summed, op=MPI.SUM, stream=stream)
            comm.Reduce(x, reduced if RANK == last else None, op=MPI.SUM, root=last, stream=stream)
            comm.Bcast(b, root=0, stream=stream)
            comm.Allgather(x, gathered, stream=stream)
            graph = stream.end_capture()
        assert comm._paths.hierarchy.calls == calls + 4, "a call of the graph did not take the hierarchical path"
        for rep in range(GRAPH_REPLAYS):
            inputs = [np.random.default_rng([seed, rep, r]).standard_normal(count) for r in range(N)]
            with stream:
                x.set(inputs[RANK], stream=stream)
                if RANK == 0:
                    b.set(inputs[0], stream=stream)
                else:
                    b.fill(np.nan)
                for out in (summed, reduced, gathered):
                    out.fill(np.nan)
            graph.launch(stream)
            stream.synchronize()
            want = hierarchy.reduce_in_hierarchy_order(dtypes.F64, dtypes.SUM, inputs, comm._paths.hierarchy.h.nodes)
            got = cupy.asnumpy(summed)
            assert_bitwise(got, want, f"replay {rep}: Allreduce")
            same_everywhere(got, f"replay {rep}: Allreduce")
            if RANK == last:
                assert_bitwise(cupy.asnumpy(reduced), want, f"replay {rep}: Reduce")
            assert cupy.asnumpy(b).tobytes() == inputs[0].tobytes(), f"replay {rep}: Bcast"
            assert cupy.asnumpy(gathered).tobytes() == np.concatenate(inputs).tobytes(), f"replay {rep}: Allgather"
        comm.check()
        assert comm._paths.hierarchy.calls == calls + 4
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        finish(comm)
        assert cupy.asnumpy(x).tobytes() == want.tobytes()
    finally:
        comm.close()


def test_random_mix_of_every_hierarchical_collective(k, seed):
    """Sizes, types, ops, roots and both schemes drawn at random (the same draws on every rank),
    each result against its reference; two communicators used in turn."""
    comms = [emulated(k, "leaders"), emulated(k, "slices")]
    rng = np.random.default_rng(seed)
    cases = [(np.float64, MPI.SUM), (np.float32, MPI.MIN), (np.int32, MPI.BAND), (np.complex64, MPI.SUM)]
    try:
        for i in range(STRESS_CALLS):
            comm = comms[i % 2]
            dtype, op = cases[rng.integers(len(cases))]
            code, opc = dtypes.code_of_numpy(dtype), dtypes.op_code(op)
            count = int(rng.choice([1, k, 4 * k, 64 * k, 1000 * k]))
            kind, root = rng.integers(4), int(rng.integers(N))
            inputs = [host_input(code, opc, count, seed + i, r) for r in range(N)]
            x = cupy.asarray(inputs[RANK])
            if kind == 0:
                comm.Allreduce(MPI.IN_PLACE, x, op=op)
                got, want = x, hierarchy.reduce_in_hierarchy_order(code, opc, inputs, comm._paths.hierarchy.h.nodes)
            elif kind == 1:
                comm.Bcast(x, root=root)
                got, want = x, inputs[root]
            elif kind == 2:
                y = cupy.zeros_like(x)
                comm.Reduce(x, y, op=op, root=root)
                got = y if RANK == root else None
                want = hierarchy.reduce_in_hierarchy_order(code, opc, inputs, comm._paths.hierarchy.h.nodes)
            else:
                got = cupy.zeros(N * count, dtype)
                comm.Allgather(x, got)
                want = np.concatenate(inputs)
            finish(comm)
            if got is not None:
                assert_bitwise(cupy.asnumpy(got), want, f"call {i}: kind {kind}, {np.dtype(dtype).name} x{count}, root {root}")
    finally:
        for comm in comms:
            comm.close()


@pytest.mark.parametrize("call", ["allreduce-leaders", "allreduce-slices", "bcast"])
def test_a_rank_that_skips_a_call_is_named_on_every_rank(k, call):
    """The last rank, and the leader of the last node, skip one call in turn: every other rank
    raises CollectiveTimeout naming it, in the call, at synchronize() (a GPU wait surfaces there) or,
    where its part did not need the missing rank, at check() once the others report it."""
    timeout = 1.0
    scheme = call.split("-")[1] if "-" in call else "auto"
    for victim in sorted({N - 1, N - k}):
        comm = emulated(k, scheme, timeout)
        x = cupy.ones(8 * k)
        run = (lambda: comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)) if call != "bcast" else \
            (lambda: comm.Bcast(x, root=0))
        run()
        finish(comm)
        WORLD.Barrier()
        if RANK != victim:
            start = time.monotonic()
            with pytest.raises(hpcolls.CollectiveTimeout, match=f"rank {victim} is missing"):
                run()
                finish(comm)
                while time.monotonic() - start < 2 * timeout + 5:
                    comm.check()
                    time.sleep(0.01)
            assert time.monotonic() - start < 2 * timeout + 5
            with pytest.raises(hpcolls.CommunicatorBroken, match=f"rank {victim} is missing"):
                run()
        WORLD.Barrier()
        comm.close()


def test_a_rank_that_skips_a_graph_replay_is_named_on_every_rank(k):
    """A graph of one hierarchical Allreduce replayed once everywhere, then once more everywhere
    but on the last rank: every other rank raises CollectiveTimeout naming it at check() (what a
    replay's host node or a node kernel met surfaces there, or the others' report of it), within
    a bounded time; the communicator is broken afterwards."""
    timeout = 1.0
    victim = N - 1
    comm = emulated(k, "leaders", timeout)
    x = cupy.ones(8 * k)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM, stream=stream)
        graph = stream.end_capture()
    graph.launch(stream)
    stream.synchronize()
    comm.check()
    assert float(x[0]) == N
    WORLD.Barrier()
    if RANK != victim:
        start = time.monotonic()
        with pytest.raises(hpcolls.CollectiveTimeout, match=f"rank {victim} is missing"):
            graph.launch(stream)
            stream.synchronize()
            while time.monotonic() - start < 2 * timeout + 5:
                comm.check()
                time.sleep(0.01)
        assert time.monotonic() - start < 2 * timeout + 5
        with pytest.raises(hpcolls.CommunicatorBroken, match=f"rank {victim} is missing"):
            comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
    WORLD.Barrier()
    comm.close()


def test_bench_times_the_hierarchy_beside_flat_mpi_and_flat_native(k, tmp_path_factory):
    """python -m hpcolls.bench --hierarchy K: its rows, each checked (0 wrong elements), host-timed
    (as eager calls run) while the flat native row is graph-timed."""
    import json

    from hpcolls import bench
    path = WORLD.bcast(str(tmp_path_factory.mktemp("bench") / "bench.json") if RANK == 0 else None)
    rc = bench.main(["--hierarchy", str(k), "--algos", "auto,mpi-device", "--no-inplace", "--min-bytes", "8",
                     "--max-bytes", "65536", "--factor", "32", "--reps", "3", "--warmup", "1", "--iters", "3",
                     "--graph-calls", "10", "--no-kernel-trace", "--json", path])
    assert rc == 0, "the bench counted wrong elements"
    if RANK == 0:
        with open(path) as f:
            rows = json.load(f)["rows"]
        assert {r["algo"] for r in rows} == {"auto", "hier-leaders", "hier-slices", "hier-auto", "mpi-device"}
        assert all(r["timing"] == "host" for r in rows if r["algo"] != "auto")
        assert all(r["timing"] == "graph" for r in rows if r["algo"] == "auto")
        assert all(r["route"] == "hierarchical" for r in rows if r["algo"].startswith("hier-"))
