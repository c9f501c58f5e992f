"""AllReduce on device buffers, on the GPU machine: every dtype x op, sizes from 1 element to
16 MiB, in place and out of place, each algorithm, bitwise against a rank-order reference and
bitwise equal across ranks."""
import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from hpcolls import _native, config, dtypes
from hpcolls.routes.native import route_of

from allreduce_cases import (ALL_CODES, ALL_OPS, assert_bitwise, assert_sum_within_rounding,
                             diagnostics_missing, digest, host_input, poison, reduce_in_rank_order, reference,
                             run_allreduce, supported)

cupy = pytest.importorskip("cupy")
MPI_OPS = dtypes.mpi_ops_by_code()
COUNTS_SMALL = (1, 2, 3, 7, 8, 9, 31, 64, 127, 1000, 4097)
WORLD = MPI.COMM_WORLD


@pytest.fixture(scope="module")
def comms(gpu):
    made = {a: hpcolls.Communicator(WORLD, algo=a) for a in ("oneshot", "twoshot", "auto")}
    yield made
    for c in made.values():
        c.close()


@pytest.fixture(scope="module")
def seed():
    return WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63), root=0)


@pytest.mark.parametrize("algo", ["oneshot", "twoshot", "auto"])
@pytest.mark.parametrize("code", ALL_CODES, ids=dtypes.NAMES)
def test_every_dtype_and_op(comms, seed, algo, code):
    for op in ALL_OPS:
        if not supported(code, op):
            continue
        for count in COUNTS_SMALL:
            for inplace in (False, True):
                got = run_allreduce(comms[algo], code, op, count, seed, inplace)
                what = f"{algo} {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} count={count} inplace={inplace}"
                assert_bitwise(got, reference(code, op, count, seed, WORLD.size), what)
                digests = WORLD.allgather(digest(got))
                assert len(set(digests)) == 1, f"{what}: ranks got different bits"


def check_both_algorithms(seed, cases, counts, what):
    """Fresh one-shot and two-shot communicators (they read the environment the caller set),
    each (code, op) of `cases` at each count, odd counts in place; bitwise against the
    reference, and the call must have stayed on the native path."""
    for algo in ("oneshot", "twoshot"):
        comm = hpcolls.Communicator(WORLD, algo=algo)
        try:
            for code, op in cases:
                for count in counts:
                    got = run_allreduce(comm, code, op, count, seed, inplace=count % 2 == 1)
                    assert_bitwise(got, reference(code, op, count, seed, WORLD.size),
                                   f"{what} {algo} {dtypes.NAMES[code]} count={count}")
            assert comm.native_path == "on", comm.native_path
        finally:
            comm.close()


SMALL_KERNEL, GENERAL_KERNEL = "one-shot (small-message kernel)", "one-shot"


def test_which_one_shot_kernel(gpu, monkeypatch, seed):
    """At 2, 4 and 8 ranks one-shot runs its small-message kernel (a thread per 16-byte chunk, a
    block per 4 KiB) up to as many blocks as the rank's share of the SMs (max_blocks); other rank
    counts, larger messages, a forced block size and the diagnostic LL modes run the general
    kernel. Both sides of the first block boundary and of the limit are bitwise right, in place
    and not. The LL protocol's kernels: forced, as the selection table takes larger messages to
    the sentinel protocol (test_hpcolls_protocols_gpu.py has those)."""
    compiled = WORLD.size in _native.SMALL_ONESHOT_RANKS
    with monkeypatch.context() as env:
        env.setenv("HPCOLLS_PROTOCOL", "ll")
        comm = hpcolls.Communicator(WORLD, algo="oneshot")
        comm.config  # noqa: B018 - a communicator reads the environment at its first use: now
    try:
        comm.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)
        limit = comm._paths.native.small_oneshot_max_bytes
        assert limit == (comm._paths.native.max_blocks * _native.SMALL_ONESHOT_BLOCK_BYTES if compiled else 0)
        small = SMALL_KERNEL if compiled else GENERAL_KERNEL
        sizes = (1, 8, 1000, 4096, 4097, max(limit, 8), max(limit, 8) + 1)
        assert [comm._paths.native.kernel(n) for n in sizes] == [small] * 6 + [GENERAL_KERNEL]
        edges = (limit // 8 - 1, limit // 8, limit // 8 + 1) if compiled else ()
        for count in (511, 512, 513, 514, 1537) + edges:  # float64: 4088 .. 4112 bytes, 3 blocks and a bit, the limit
            for inplace in (False, True):
                got = run_allreduce(comm, dtypes.F64, dtypes.SUM, count, seed, inplace)
                assert_bitwise(got, reference(dtypes.F64, dtypes.SUM, count, seed, WORLD.size),
                               f"count={count} inplace={inplace} ({comm._paths.native.kernel(8 * count)})")
    finally:
        comm.close()
    forced_settings = (("HPCOLLS_THREADS_PER_BLOCK", "64"),) + ((("HPCOLLS_LL_MODE", "1"),) if not diagnostics_missing() else ())
    for name, value in forced_settings:
        with monkeypatch.context() as env:
            env.setenv(name, value)
            forced = hpcolls.Communicator(WORLD, algo="oneshot")
            try:
                forced.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)
                assert forced._paths.native.kernel(8) == GENERAL_KERNEL, f"{name}={value}"
            finally:
                forced.close()


@pytest.mark.parametrize("mode", range(config.LL_MODES))
def test_every_ll_mode(gpu, monkeypatch, seed, mode):
    """Each LL store/poll variant is its own kernel instantiation: run every one of them, both
    algorithms, a type of each element size, a few sizes, bitwise against the reference. Modes
    1..3 are the diagnostic module's (HPCOLLS_DIAGNOSTICS=1 builds)."""
    if mode != 0 and diagnostics_missing():
        pytest.skip(diagnostics_missing())
    monkeypatch.setenv("HPCOLLS_LL_MODE", str(mode))
    check_both_algorithms(seed, ((dtypes.F64, dtypes.SUM), (dtypes.C128, dtypes.PROD), (dtypes.I32, dtypes.MAX),
                                 (dtypes.F16, dtypes.MIN), (dtypes.I8, dtypes.BXOR)), (1, 9, 1000, 4097),
                          f"LL mode {mode}")


def test_diagnostic_ll_mode_without_the_diagnostic_build(gpu, monkeypatch):
    """Without hpcolls._native_diag, HPCOLLS_LL_MODE=1 is an error on every rank that says what
    to build (not a native path silently off), at every call; nothing hangs."""
    if not diagnostics_missing():
        pytest.skip("the diagnostic module is built: LL mode 1 runs (test_every_ll_mode)")
    monkeypatch.setenv("HPCOLLS_LL_MODE", "1")
    comm = hpcolls.Communicator(WORLD, algo="auto")
    try:
        x = cupy.ones(5)
        for _ in range(2):
            with pytest.raises(RuntimeError, match="needs the diagnostic build.*HPCOLLS_DIAGNOSTICS=1"):
                comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        assert bool(cupy.all(x == 1))
    finally:
        comm.close()


def test_dependent_launch(gpu, monkeypatch, seed):
    """Programmatic dependent launch is on by default where the GPU has it (compute capability
    9.0+), and HPCOLLS_DEPENDENT_LAUNCH=0 turns it off: the same bits either way, both algorithms,
    and the native layer says which is in use."""
    supported = int(cupy.cuda.Device().compute_capability) >= 90
    for setting, want in ((None, supported), ("0", False), ("1", supported)):
        if setting is None:
            monkeypatch.delenv("HPCOLLS_DEPENDENT_LAUNCH", raising=False)  # the default, whatever the run set
        else:
            monkeypatch.setenv("HPCOLLS_DEPENDENT_LAUNCH", setting)
        what = f"HPCOLLS_DEPENDENT_LAUNCH={setting or 'unset'}"
        check_both_algorithms(seed, ((dtypes.F64, dtypes.SUM), (dtypes.BF16, dtypes.MAX)), (1, 9, 4097), what)
        comm = hpcolls.Communicator(WORLD, algo="oneshot")
        try:
            comm.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)
            assert comm._paths.native.dependent_launch == want, what
        finally:
            comm.close()


@pytest.mark.parametrize("threads", [32, 1024])
def test_block_sizes(gpu, monkeypatch, seed, threads):
    """One-shot gives every chunk a lane per rank and loops over whole warps; forced block sizes
    make small calls span many blocks (32 threads) or one wide block (1024, capped at what a
    kernel can run), and large ones loop over the grid, both algorithms."""
    monkeypatch.setenv("HPCOLLS_THREADS_PER_BLOCK", str(threads))
    check_both_algorithms(seed, ((dtypes.F64, dtypes.SUM), (dtypes.C64, dtypes.PROD), (dtypes.U64, dtypes.MIN)),
                          (1, 3, 1000, 4097, 60001), f"{threads} threads")


@pytest.mark.parametrize("nbytes", [64 << 10, 1 << 20, 4 << 20, 16 << 20])
@pytest.mark.parametrize("code", [dtypes.F64, dtypes.C128, dtypes.I32, dtypes.F16])
def test_large_sizes_every_path(comms, seed, code, nbytes):
    """Up to 16 MiB: past the native limit the auto communicator goes to NCCL where it runs, and
    every communicator otherwise to the native kernels in pieces (rank order, bitwise)."""
    count = nbytes // dtypes.ITEMSIZE[code] + 1  # odd on purpose
    inputs = [host_input(code, dtypes.SUM, count, seed, r) for r in range(WORLD.size)]
    want = reference_from(inputs, code, dtypes.SUM)
    for algo, comm in comms.items():
        got = run_allreduce(comm, code, dtypes.SUM, count, seed, inplace=False)
        what = f"{algo} {nbytes} B"
        if comm._paths.native.select(count * dtypes.ITEMSIZE[code]) >= 0:
            assert_bitwise(got, want, what + " (native: rank order)")
        else:
            route, why, _ = route_of(comm, "Allreduce", MPI.IN_PLACE, cupy.empty(count, dtypes.numpy_dtype(code)))
            if route == "nccl":
                # NCCL promises the sum, not our rank order: floating-point sums may differ in
                # the last bits, bounded by the usual (N-1) eps sum|x| (integers stay exact).
                assert_sum_within_rounding(got, want, inputs, code, what + " (NCCL)")
            else:
                assert route == "pieces", f"{what}: {route} ({why})"
                assert_bitwise(got, want, what + " (native, in pieces: rank order)")
        digests = WORLD.allgather(digest(got))
        assert len(set(digests)) == 1, f"{what}: ranks got different bits"


@pytest.mark.parametrize("inplace", [False, True], ids=["out-of-place", "in-place"])
def test_past_the_native_limit_in_pieces(comms, seed, inplace):
    """Past the largest message the native path takes, a one-shot or two-shot communicator (and
    auto where NCCL cannot run) carries the call through the native kernels in pieces of that
    size, the last one shorter: rank order, bitwise, for 2-, 8- and 16-byte elements, ops other
    than SUM, and a view that is not 16-byte aligned."""
    for algo, comm in comms.items():
        largest = comm._paths.native.largest_message()
        assert largest > 0 and largest % 16 == 0, largest
        assert comm._paths.native.select(largest) >= 0, f"{algo}: the largest message is not taken"
        assert comm._paths.native.select(largest + 16) < 0, f"{algo}: a larger message is taken too"
        for code, op, offset in ((dtypes.C128, dtypes.SUM, 0), (dtypes.F64, dtypes.MAX, 1),
                                 (dtypes.F16, dtypes.PROD, 3)):
            itemsize = dtypes.ITEMSIZE[code]
            count = (5 * largest // 2) // itemsize + 7  # two whole pieces and a short, odd one
            route, why, _ = route_of(comm, "Allreduce", MPI.IN_PLACE, cupy.empty(count, dtypes.numpy_dtype(code)),
                                     MPI_OPS[op])
            if route == "nccl":  # auto, where NCCL runs: test_large_sizes_every_path covers it
                continue
            assert route == "pieces", f"{algo}: {route} ({why})"
            inputs = [host_input(code, op, count + offset, seed, r)[offset:] for r in range(WORLD.size)]
            want = reference_from(inputs, code, op)
            send = cupy.asarray(host_input(code, op, count + offset, seed, WORLD.rank))[offset:]
            recv = send if inplace else cupy.empty_like(send)
            if not inplace:
                poison(recv)
            comm.Allreduce(MPI.IN_PLACE if inplace else send, recv, op=MPI_OPS[op])
            assert_bitwise(cupy.asnumpy(recv), want, f"{algo} {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} "
                                                     f"offset {offset}, {count * itemsize} B in pieces of {largest} B")
            if not inplace:
                assert_bitwise(cupy.asnumpy(send), inputs[WORLD.rank], "send buffer modified")
            assert len(set(WORLD.allgather(digest(cupy.asnumpy(recv))))) == 1, "ranks got different bits"


def test_special_values_preserved(comms):
    vals = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 5e-324], dtype=np.float64)
    for comm in comms.values():
        for op in sorted(dtypes.OPS_OF[dtypes.F64]):
            host = np.roll(vals, WORLD.rank)
            recv = cupy.asarray(host)
            comm.Allreduce(MPI.IN_PLACE, recv, op=MPI_OPS[op])
            want = reference_from([np.roll(vals, r) for r in range(WORLD.size)], dtypes.F64, op)
            assert_bitwise(cupy.asnumpy(recv), want, f"special values {dtypes.OP_NAMES[op]}")


def reference_from(contributions, code, op):
    return reduce_in_rank_order(code, op, contributions)


def test_single_rank_copy_keeps_nan_payloads(gpu):
    """One rank: the result is the input bit for bit, NaN payloads included."""
    comm = hpcolls.Communicator(MPI.COMM_SELF)
    host = np.array([0x7FF0000000000123, 0xFFF8000000000456, 0x8000000000000000], dtype=np.uint64).view(np.float64)
    src = cupy.asarray(host)
    dst = cupy.empty_like(src)
    comm.Allreduce(src, dst, op=MPI.SUM)
    assert np.array_equal(cupy.asnumpy(dst).view(np.uint64), host.view(np.uint64))
    comm.close()


def test_unaligned_views(comms, seed):
    """Buffers at odd element offsets (not 16-byte aligned) take the element-wise path."""
    count = 37
    for code in (dtypes.F16, dtypes.F32, dtypes.C64, dtypes.I8, dtypes.U16, dtypes.BOOL):
        for offset in (1, 3):
            op = dtypes.LXOR if code == dtypes.BOOL else dtypes.SUM
            inputs = [host_input(code, op, count + offset, seed, r)[offset:] for r in range(WORLD.size)]
            want = reference_from(inputs, code, op)
            for comm in comms.values():
                work = cupy.asarray(host_input(code, op, count + offset, seed, WORLD.rank))[offset:]
                assert work.data.ptr % 16 != 0
                comm.Allreduce(MPI.IN_PLACE, work, op=MPI_OPS[op])
                assert_bitwise(cupy.asnumpy(work), want, f"offset {offset} {dtypes.NAMES[code]}")


def test_mpi_specs_and_streams(comms, seed):
    host = host_input(dtypes.F64, dtypes.SUM, 100, seed, WORLD.rank)
    want = reference(dtypes.F64, dtypes.SUM, 100, seed, WORLD.size)
    stream = cupy.cuda.Stream(non_blocking=True)
    for comm in comms.values():
        send = cupy.asarray(host)
        recv = cupy.empty_like(send)
        comm.Allreduce([send, MPI.DOUBLE], [recv, MPI.DOUBLE], op=MPI.SUM, stream=stream)
        stream.synchronize()
        assert_bitwise(cupy.asnumpy(recv), want, "[buf, MPI.DOUBLE] on explicit stream")
        recv2 = cupy.full(120, -1.0)
        comm.Allreduce([send, 100, MPI.DOUBLE], [recv2, 100, MPI.DOUBLE], op=MPI.SUM)
        got = cupy.asnumpy(recv2)
        assert_bitwise(got[:100], want, "[buf, count, MPI.DOUBLE]")
        assert np.all(got[100:] == -1.0), "elements past count were written"


NEW_CODES = (dtypes.I8, dtypes.U8, dtypes.I16, dtypes.U16, dtypes.BOOL)


@pytest.mark.parametrize("algo", ["oneshot", "twoshot"])
def test_small_types_every_tail(comms, seed, algo):
    """1- and 2-byte types pack 16 or 8 elements into a 16-byte chunk: every element count from
    1 to 49 (each position of the last, partial chunk, and the chunk's two LL lines), in place and
    out, every op the type takes, bitwise against numpy and across ranks; the bytes after the
    message are left alone."""
    comm = comms[algo]
    for code in NEW_CODES:
        for op in sorted(dtypes.OPS_OF[code]):
            for count in range(1, 50):
                inplace = count % 2 == 0
                host = host_input(code, op, count, seed, WORLD.rank)
                send = cupy.asarray(host)
                recv = cupy.empty(count + 16, dtype=send.dtype)  # 16 guard elements after the message
                poison(recv)
                guard = cupy.asnumpy(recv[count:])
                if inplace:
                    recv[:count] = send
                comm.Allreduce(MPI.IN_PLACE if inplace else send, recv[:count], op=MPI_OPS[op])
                what = f"{algo} {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} count={count} inplace={inplace}"
                got = cupy.asnumpy(recv[:count])
                assert_bitwise(got, reference(code, op, count, seed, WORLD.size), what)
                assert np.array_equal(cupy.asnumpy(recv[count:]).view(np.uint8), guard.view(np.uint8)), \
                    f"{what}: bytes past the message written"
                assert len(set(WORLD.allgather(digest(got)))) == 1, f"{what}: ranks got different bits"


def test_ops_a_type_does_not_take_raise(comms):
    """A (type, op) pair MPI does not define (BAND on floating point, SUM on bool, MIN on complex)
    is refused by the native layer with an error naming both, and launches nothing."""
    x = cupy.zeros(4, dtype=cupy.float64)
    nc = comms["oneshot"]._paths.native
    for code, op in ((dtypes.F64, dtypes.BAND), (dtypes.F16, dtypes.LAND), (dtypes.BOOL, dtypes.SUM),
                     (dtypes.BOOL, dtypes.BAND), (dtypes.C128, dtypes.MIN)):
        before = nc.host_epoch
        with pytest.raises(ValueError, match=f"(?i)MPI.{dtypes.OP_NAMES[op]} is not defined for {dtypes.NAMES[code]}"):
            nc.allreduce(x.data.ptr, x.data.ptr, 1, code, op, 0)
        assert nc.host_epoch == before, "a refused call launched"
