"""hpcolls' device API on the GPU machine (docs/DEVICE_API.md; native/include/hpcolls/device/):
user kernels that call hpcolls::device::allreduce / broadcast / allgather themselves, on a
communicator whose own collectives run between them. Run at 1, 2, 3, 4 and 8 ranks on one GPU
under MPS (tests/gpu_steps/device_api.steps, which also builds and runs the example
docs/examples/device_api_normalize.cu). Checked, with random data fresh each run and outputs
poisoned:
  - the struct: rank, size, this rank's scratch as the NativeComm maps it;
  - allreduce of every type and op the host path takes, odd counts, blocks of several shapes, in
    place and not: bitwise equal to the host reference in rank order (hpcolls.reduction) and
    across ranks;
  - broadcast from every root and allgather, odd byte counts, unaligned buffers;
  - device operations interleaved with the communicator's host calls in a random order (the same
    on every rank), on one stream;
  - a CUDA graph of device operations and host calls replayed 1000 times;
  - a rank whose kernel skips an operation: CollectiveTimeout on every rank, then the
    communicator broken.
  - allreduce at grid scope (a cooperative launch): a few types and ops, up to the largest
    message, between host calls; outside a cooperative launch it moves nothing.
The grid-scope tests have not run on a GPU yet (the rest ran at 1-8 ranks, docs/DEVICE_API.md).
Without a GPU every test is skipped (tests/gpu/conftest.py)."""
import time
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from allreduce_cases import ALL_CODES, ALL_OPS, assert_bitwise, digest, host_input, reference, supported
from gpu_required import cupy_with_a_gpu
from hpcolls import dtypes

cupy = cupy_with_a_gpu()
WORLD = MPI.COMM_WORLD
N, RANK = WORLD.size, WORLD.rank
REPO = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).with_name("device_api_kernels.cu")
# C++ types in hpcolls.dtypes' order (dtypes.NAMES), and Op's names in dtypes.OP_NAMES' order.
C_TYPES = ("__half", "__nv_bfloat16", "float", "double", "float2", "double2", "int32_t", "int64_t", "uint32_t",
           "uint64_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "bool")
CPP_OPS = ("Sum", "Prod", "Min", "Max", "BAnd", "BOr", "BXor", "LAnd", "LOr", "LXor")
STATUS = {"ok": 0, "broken": 1, "too_large": 2, "not_cooperative": 5}  # hpcolls_device_status
GRAPH_REPLAYS = 1000
BLOCKS = ((256, 1, 1), (96, 1, 1), (32, 4, 2), (8, 1, 1))  # the operations take blocks of any shape


def allreduce_entry(code, op):
    return f"allreduce_{dtypes.NAMES[code]}_{dtypes.OP_NAMES[op]}"


# The grid-scope allreduce's cases: one per kind of element and op family (it shares the
# block-scope operation's steps, which every pair above runs).
GRID_CASES = ((dtypes.F64, dtypes.SUM), (dtypes.C128, dtypes.PROD), (dtypes.F16, dtypes.MAX),
              (dtypes.I64, dtypes.BXOR), (dtypes.BOOL, dtypes.LXOR))


def source(block_scope=True):
    """The test kernels and an allreduce entry per case: every (type, op) at block scope, and
    GRID_CASES at grid scope (named grid_...)."""
    def entry(name, runner, c, o):
        return (f'extern "C" __global__ void {name}(const hpcolls_device_comm_t* c, const void* s, void* r, '
                f'unsigned long long n, int* st) {{ {runner}<{C_TYPES[c]}, Op::{CPP_OPS[o]}>(c, s, r, n, st); }}')
    entries = [entry("grid_" + allreduce_entry(c, o), "run_allreduce_grid", c, o) for c, o in GRID_CASES]
    if block_scope:
        entries += [entry(allreduce_entry(c, o), "run_allreduce", c, o)
                    for c in ALL_CODES for o in ALL_OPS if supported(c, o)]
    return KERNELS.read_text() + "\n" + "\n".join(entries) + "\n"


def compiled(code, cooperative=False):
    """A module of `code`, compiled by nvcc once: rank 0 first, the other ranks then load its
    cached binary (cupy's kernel cache) instead of compiling the same file N times at once.
    cooperative: cupy launches its kernels with cuLaunchCooperativeKernel (grid-scope operations)."""
    options = ("-std=c++17", f"-I{REPO / 'native/include'}")

    def load():
        module = cupy.RawModule(code=code, options=options, backend="nvcc", enable_cooperative_groups=cooperative)
        module.get_function("no_operation")  # compiles now
        return module
    module = load() if RANK == 0 else None
    WORLD.Barrier()
    return module or load()


@pytest.fixture(scope="module")
def kernels(gpu):
    """The test kernels, launched as ordinary kernels."""
    return compiled(source())


@pytest.fixture(scope="module")
def cooperative_kernels(gpu):
    """The grid-scope entries, launched cooperatively."""
    return compiled(source(block_scope=False), cooperative=True)


@pytest.fixture(scope="module")
def comm(gpu):
    c = hpcolls.Communicator(WORLD)
    c.Allreduce(MPI.IN_PLACE, cupy.zeros(1), op=MPI.SUM)  # opens the native path (collective)
    yield c
    c.close()


@pytest.fixture(scope="module")
def dc(comm, gpu):
    """(DeviceComm, its bytes in device memory)."""
    d = comm.device_comm(gpu)
    return d, d.to_device(cupy)


def status_word():
    return cupy.full(1, -1, dtype=cupy.int32)


def shared_seed():
    return WORLD.bcast(int(np.random.default_rng().integers(2**62)) if RANK == 0 else None)


def test_the_struct_is_this_communicators(comm, dc, gpu):
    d, raw = dc
    native = comm.native_comm(gpu)
    assert (d.rank, d.size, len(d.scratch)) == (RANK, N, N)
    assert d.scratch[RANK] == native.scratch_address(RANK)
    assert d.half_bytes * 2 <= native.scratch_bytes and d.max_bytes["allreduce"] > 0
    assert raw.nbytes == len(d.raw) and bytes(cupy.asnumpy(raw)) == d.raw
    assert d.numpy()["nranks"] == N


def run_allreduce(kernels, raw, code, op, send, recv, block):
    st = status_word()
    kernels.get_function(allreduce_entry(code, op))((1,), block, (raw, send, recv, np.uint64(send.size), st))
    cupy.cuda.get_current_stream().synchronize()
    return int(st.get()[0])


def to_device(values, code):
    return cupy.asarray(values.view(np.uint16) if code == dtypes.BF16 else values)


@pytest.mark.parametrize("count", (1, 7, 1000, 4099))
def test_allreduce_every_type_and_op_is_the_host_reference_bitwise(kernels, dc, count):
    d, raw = dc
    seed = shared_seed()
    for k, (code, op) in enumerate((c, o) for c in ALL_CODES for o in ALL_OPS if supported(c, o)):
        block = BLOCKS[k % len(BLOCKS)]
        send = to_device(host_input(code, op, count, seed, RANK), code)
        in_place = k % 3 == 0
        recv = send if in_place else cupy.full_like(send, 0x5A if send.dtype.itemsize == 1 else 77)
        status = run_allreduce(kernels, raw, code, op, send, recv, block)
        what = f"{dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} x{count}, block {block}, in place {in_place}"
        assert status == STATUS["ok"], f"{what}: status {status}"
        got = cupy.asnumpy(recv)
        want = reference(code, op, count, seed, N)
        assert_bitwise(got.view(want.dtype) if code == dtypes.BF16 else got, want, what)
        digests = WORLD.allgather(digest(got))
        assert len(set(digests)) == 1, f"{what}: ranks differ"


def run_allreduce_grid(module, raw, code, op, send, recv, blocks):
    st = cupy.full(blocks, -1, dtype=cupy.int32)
    module.get_function("grid_" + allreduce_entry(code, op))((blocks,), (256,), (raw, send, recv, np.uint64(send.size), st))
    cupy.cuda.get_current_stream().synchronize()
    return set(st.get().tolist())


@pytest.mark.parametrize("count", (1, 1000, 8191, "largest"))
def test_allreduce_at_grid_scope_is_the_host_reference_bitwise(cooperative_kernels, comm, dc, gpu, count):
    """Every block of a cooperative launch calls allreduce_grid: the chunks spread over the grid,
    the result bitwise the block-scope one's (the host reference), every block's status the same;
    a host Allreduce between two grid operations keeps the one sequence of epochs. The grid: this
    rank's share of the GPU, as the host path sizes its own waiting grids (max_blocks)."""
    d, raw = dc
    seed = shared_seed()
    blocks = comm.native_comm(gpu).max_blocks
    for k, (code, op) in enumerate(GRID_CASES):
        n = d.max_bytes["allreduce"] // dtypes.ITEMSIZE[code] if count == "largest" else count
        send = to_device(host_input(code, op, n, seed + k, RANK), code)
        in_place = k % 2 == 0
        recv = send if in_place else cupy.full_like(send, 0x5A if send.dtype.itemsize == 1 else 77)
        statuses = run_allreduce_grid(cooperative_kernels, raw, code, op, send, recv, blocks)
        what = f"grid of {blocks}: {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} x{n}, in place {in_place}"
        assert statuses == {STATUS["ok"]}, f"{what}: statuses {statuses}"
        got = cupy.asnumpy(recv)
        want = reference(code, op, n, seed + k, N)
        assert_bitwise(got.view(want.dtype) if code == dtypes.BF16 else got, want, what)
        assert len(set(WORLD.allgather(digest(got)))) == 1, f"{what}: ranks differ"
        x = cupy.full(3, float(RANK + 1))
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        assert (cupy.asnumpy(x) == N * (N + 1) / 2).all(), f"after {what}: the host call between"


def test_allreduce_at_grid_scope_in_an_ordinary_launch_is_all_or_nothing(kernels, cooperative_kernels, dc):
    """A grid-scope operation in an ordinary launch: where cooperative groups report no grid
    workspace it returns NotCooperative on every block and moves nothing; on drivers that give every
    launch one (CUDA 13's: docs/DEVICE_API.md) its two blocks, resident together, run it. Either
    way every block returns the same status, the result is whole or untouched, and the
    communicator's next grid operation is unaffected (an epoch taken only where the data moved)."""
    d, raw = dc
    send = cupy.full(100, float(RANK + 1))
    recv = cupy.full(100, -7.0)
    statuses = run_allreduce_grid(kernels, raw, dtypes.F64, dtypes.SUM, send, recv, 2)
    assert statuses in ({STATUS["not_cooperative"]}, {STATUS["ok"]}), statuses
    assert len(set(WORLD.allgather(tuple(statuses)))) == 1, "ranks differ"
    want = -7.0 if statuses == {STATUS["not_cooperative"]} else N * (N + 1) / 2
    assert (cupy.asnumpy(recv) == want).all()
    recv[:] = -7.0
    statuses = run_allreduce_grid(cooperative_kernels, raw, dtypes.F64, dtypes.SUM, send, recv, 2)
    assert statuses == {STATUS["ok"]} and (cupy.asnumpy(recv) == N * (N + 1) / 2).all()


def test_a_message_past_the_limit_moves_nothing_on_every_rank(kernels, dc):
    d, raw = dc
    count = d.max_bytes["allreduce"] // 8 + 1
    send, recv = cupy.ones(count), cupy.full(count, 5.0)
    assert run_allreduce(kernels, raw, dtypes.F64, dtypes.SUM, send, recv, (256, 1, 1)) == STATUS["too_large"]
    assert bool((recv == 5.0).all())


@pytest.mark.parametrize("nbytes", (1, 13, 16, 4099))
def test_broadcast_from_every_root_and_allgather_move_bytes_as_they_are(kernels, dc, nbytes):
    d, raw = dc
    seed = shared_seed()
    rng = np.random.default_rng([seed, nbytes])
    data = rng.integers(0, 256, size=(N, nbytes), dtype=np.uint8)
    for root in range(N):
        buf = cupy.zeros(nbytes + 1, dtype=cupy.uint8)[1:]  # an odd address: the byte path
        buf[...] = cupy.asarray(data[root] if RANK == root else np.full(nbytes, 0xA5, np.uint8))
        st = status_word()
        kernels.get_function("broadcast_bytes")((1,), (128,), (raw, buf, np.uint64(nbytes), np.int32(root), st))
        assert int(st.get()[0]) == STATUS["ok"]
        assert np.array_equal(cupy.asnumpy(buf), data[root]), f"broadcast of {nbytes} B from {root}"
    send = cupy.asarray(data[RANK])
    recv = cupy.full(N * nbytes, 0xA5, dtype=cupy.uint8)
    st = status_word()
    kernels.get_function("allgather_bytes")((1,), (64,), (raw, send, recv, np.uint64(nbytes), st))
    assert int(st.get()[0]) == STATUS["ok"]
    assert np.array_equal(cupy.asnumpy(recv), data.reshape(-1)), f"allgather of {nbytes} B"


def test_device_operations_interleave_with_host_calls(kernels, comm, dc):
    """A random sequence (the same on every rank) of host-path Allreduce / Bcast / Allgather and
    device-path allreduce / broadcast / allgather on one communicator and one stream; every result
    checked. A device call reads the epoch the host call before it left, and the other way round."""
    d, raw = dc
    seed = shared_seed()
    rng = np.random.default_rng(seed)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for call in range(600):
            kind = rng.integers(6)
            count = int(rng.integers(1, 3000))
            root = int(rng.integers(N))
            mine = cupy.arange(count, dtype=cupy.int64) * (RANK + 1) + call
            want_sum = np.arange(count, dtype=np.int64) * (N * (N + 1) // 2) + N * call
            st = status_word()
            if kind in (0, 3):
                out = cupy.full(count, -7, dtype=cupy.int64)
                if kind == 0:
                    comm.Allreduce(mine, out, op=MPI.SUM)
                else:
                    kernels.get_function(allreduce_entry(dtypes.I64, dtypes.SUM))(
                        (1,), (128,), (raw, mine, out, np.uint64(count), st))
                want = want_sum
            elif kind in (1, 4):
                out = mine if RANK == root else cupy.full(count, -7, dtype=cupy.int64)
                if kind == 1:
                    comm.Bcast(out, root=root)
                else:
                    kernels.get_function("broadcast_bytes")((1,), (128,), (raw, out, np.uint64(count * 8), np.int32(root), st))
                want = np.arange(count, dtype=np.int64) * (root + 1) + call
            else:
                out = cupy.full(N * count, -7, dtype=cupy.int64)
                if kind == 2:
                    comm.Allgather(mine, out)
                else:
                    kernels.get_function("allgather_bytes")((1,), (128,), (raw, mine, out, np.uint64(count * 8), st))
                want = np.concatenate([np.arange(count, dtype=np.int64) * (q + 1) + call for q in range(N)])
            stream.synchronize()
            if kind >= 3:
                assert int(st.get()[0]) == STATUS["ok"], f"call {call}: device kind {kind} status"
            assert np.array_equal(cupy.asnumpy(out), want), f"call {call}: kind {kind}, {count} elements, root {root}"
    comm.synchronize()


def test_a_graph_of_device_and_host_calls_replays(kernels, comm, dc):
    """One captured graph: a user kernel (x += 1, device allreduce, allgather, broadcast, each
    accumulated), a host-path Allreduce and Allgather of the same x; replayed 1000 times without
    the host between replays, then every accumulated result checked against its closed form."""
    d, raw = dc
    n, m, root = 300, 40, N - 1
    base = np.arange(n, dtype=np.int64) * 3 + 1000 * RANK
    x = cupy.asarray(base)
    sums, acc, gathered = cupy.zeros(n, np.int64), cupy.zeros(n, np.int64), cupy.zeros(N * m, np.int64)
    b, acc_b = cupy.zeros(m, np.int64), cupy.zeros(m, np.int64)
    host_sum, host_gathered = cupy.zeros(n, np.int64), cupy.zeros(N * m, np.int64)
    st = cupy.zeros(1, np.int32)
    step = kernels.get_function("replay_step")
    stream = cupy.cuda.Stream(non_blocking=True)
    cupy.cuda.Device().synchronize()
    with stream:
        stream.begin_capture()
        step((1,), (256,), (raw, x, sums, acc, gathered, b, acc_b, np.int32(n), np.int32(m), np.int32(root), st))
        comm.Allreduce(x, host_sum, op=MPI.SUM, stream=stream)
        comm.Allgather(x[:m], host_gathered, stream=stream)
        graph = stream.end_capture()
    all_base = [np.arange(n, dtype=np.int64) * 3 + 1000 * q for q in range(N)]
    for k in range(GRAPH_REPLAYS):
        graph.launch(stream)
    stream.synchronize()
    comm.check()
    assert int(st.get()[0]) == STATUS["ok"]
    K = GRAPH_REPLAYS
    total = sum(all_base)
    # replay k (1-based) sums total + N k; acc is the sum of those over k = 1..K
    assert np.array_equal(cupy.asnumpy(acc), K * total + N * K * (K + 1) // 2)
    assert np.array_equal(cupy.asnumpy(host_sum), total + N * K)
    assert np.array_equal(cupy.asnumpy(gathered), np.concatenate([q[:m] + K for q in all_base]))
    assert np.array_equal(cupy.asnumpy(host_gathered), np.concatenate([q[:m] + K for q in all_base]))
    assert np.array_equal(cupy.asnumpy(acc_b), K * all_base[root][:m] + K * (K + 1) // 2)


@pytest.mark.skipif(N < 2, reason="a skipped operation needs at least two ranks")
def test_a_rank_skipping_an_operation_times_out_on_every_rank(kernels, gpu):
    """Rank 0's kernel skips one device allreduce: every other rank's operation times out in it
    (status Broken, the error record naming rank, peer and epoch) and its next host call raises
    CollectiveTimeout; rank 0 times out in a later host call its broken peers never join. Nobody
    hangs, and every rank's communicator is then broken."""
    comm = hpcolls.Communicator(WORLD, timeout=1.0)
    x = cupy.ones(1000)
    comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
    comm.synchronize()
    raw = comm.device_comm(gpu).to_device(cupy)
    start = time.monotonic()
    st = status_word()
    with pytest.raises(hpcolls.CollectiveTimeout, match="timed out"):
        if RANK != 0:
            kernels.get_function(allreduce_entry(dtypes.F64, dtypes.SUM))((1,), (128,), (raw, x, x, np.uint64(1000), st))
            cupy.cuda.get_current_stream().synchronize()
            assert int(st.get()[0]) == STATUS["broken"]
            record = comm.native_comm(gpu).error_record
            assert record is not None and record["rank"] == RANK and record["peer"] == 0, record
            comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)  # the next host call raises
        else:
            # A real skip: nothing of this epoch until the peers have given up (a call made at once
            # would carry the epoch they wait for, and they would take it). Its next call may then
            # complete on what the peers stored before giving up; the one after has no peer left.
            kernels.get_function("no_operation")((1,), (32,), (st,))
            time.sleep(2.5)
            comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
            comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        comm.synchronize()
    assert time.monotonic() - start < 15
    with pytest.raises(hpcolls.CommunicatorBroken):
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
    WORLD.Barrier()
    comm.close()
