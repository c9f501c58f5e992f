"""LL128 on the GPU machine: the torn-line probe on every GPU kind and rank count (what it tested
and found, and that its verdict is the one every rank applies), and, where it showed lines whole,
the LL128 AllReduce kernels (HPCOLLS_PROTOCOL=ll128): every dtype x op, 1 element to 64 MiB with odd
sizes, bitwise against the rank-order host reference and across ranks, in place and not, CUDA-graph
replays, and a rank that skips a call timing out on every other rank instead of hanging."""
import time

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from hpcolls import dtypes, ll128_probe

from allreduce_cases import ALL_CODES, ALL_OPS, assert_bitwise, digest, reference, run_allreduce, supported

cupy = pytest.importorskip("cupy")
WORLD = MPI.COMM_WORLD
MiB = 1 << 20
# Around the tile (30 chunks = 480 bytes) and the parts two-shot cuts the tiles into.
COUNTS = (1, 7, 29, 30, 31, 61, 240, 241, 4097, 100003)
KERNELS = {"oneshot": "one-shot (LL128)", "twoshot": "two-shot (LL128)"}


@pytest.fixture(scope="module")
def seed():
    return WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63), root=0)


def ll128_comm(monkeypatch, algo, timeout=None, region_bytes=None):
    """A communicator whose Allreduce takes the LL128 kernels (HPCOLLS_PROTOCOL=ll128), opened; the
    test is skipped (on every rank alike: the verdict is agreed) where the probe did not show
    LL128 lines whole here."""
    monkeypatch.setenv("HPCOLLS_PROTOCOL", "ll128")
    if region_bytes is not None:
        monkeypatch.setenv("HPCOLLS_LL128_SCRATCH_BYTES", str(region_bytes))
    comm = hpcolls.Communicator(WORLD, algo=algo, timeout=timeout)
    comm.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)  # opens the native path: the probe runs
    assert comm.native_path == "on", comm.native_path
    if not comm._paths.native.ll128_available:
        comm.close()
        pytest.skip("the torn-line probe did not show LL128 lines whole on this machine (HPCOLLS_DEBUG=INFO says why)")
    return comm


def check(comm, code, op, count, seed, inplace, what):
    got = run_allreduce(comm, code, op, count, seed, inplace)
    assert_bitwise(got, reference(code, op, count, seed, WORLD.size), what)
    assert len(set(WORLD.allgather(digest(got)))) == 1, f"{what}: ranks got different bits"


# -- the probe ------------------------------------------------------------------------------------

def test_torn_line_probe(gpu):
    """The probe on this GPU kind at this rank count, 200 ms: it completes (no time-out, every writer
    many passes, every line read), its report adds up, and the verdict it gives is agreed. Whatever
    it finds is printed (run with -s, or see tests/gpu_steps/ll128.steps' tool step)."""
    comm = hpcolls.Communicator(WORLD)
    try:
        nc = comm.native_comm(gpu)
        assert nc is not None, comm.native_path
        set_up = WORLD.allgather(nc.ll128_available)
        assert len(set(set_up)) == 1, f"the set-up verdict differs between ranks: {set_up}"
        report, reason = ll128_probe.run(comm, nc, 200)
        assert report is not None, reason
        pairs = max(1, WORLD.size - 1)
        assert report["pairs"] == pairs and report["lines"] == pairs * report["lines_per_pair"]
        assert report["lines_per_pair"] == hpcolls._native.LL128_PROBE_MAX_LINES
        assert report["timed_out"] == 0, report
        assert report["min_iterations"] >= ll128_probe.MIN_PASSES and report["observed"] > 0, report
        assert report["iterations"] >= pairs * report["min_iterations"]
        assert report["seconds"] < 1.0, report
        on, why = ll128_probe.agree(comm, reason)
        reports = WORLD.allgather(report)
        torn = sum(r["torn"] for r in reports)
        assert on == (torn == 0 and all(r["stale"] == 0 for r in reports)), (on, why)
        print(f"\nLL128 probe, {WORLD.size} ranks, {cupy.cuda.runtime.getDeviceProperties(gpu)['name'].decode()}: "
              f"{sum(r['lines'] for r in reports)} lines, {sum(r['iterations'] for r in reports)} passes, "
              f"{sum(r['observed'] for r in reports)} line reads, {torn} torn; verdict {'on' if on else why}")
    finally:
        comm.close()


def test_probe_runs_back_to_back_on_used_scratch(gpu, monkeypatch, seed):
    """A probe after LL128 calls, and LL128 calls after a probe, on the same region: the probe's
    words never pass for an epoch and the calls' lines never for a probe pass."""
    comm = ll128_comm(monkeypatch, "twoshot")
    try:
        nc = comm._paths.native
        for round_ in range(3):
            check(comm, dtypes.F64, dtypes.SUM, 100003, seed, False, f"before probe {round_}")
            report, reason = ll128_probe.run(comm, nc, 20)
            assert reason is None, reason
            check(comm, dtypes.I32, dtypes.BXOR, 4097, seed, True, f"after probe {round_}")
    finally:
        comm.close()


# -- the kernels ----------------------------------------------------------------------------------

@pytest.mark.parametrize("algo", ["oneshot", "twoshot"])
@pytest.mark.parametrize("code", ALL_CODES, ids=dtypes.NAMES)
def test_every_dtype_and_op(gpu, monkeypatch, seed, algo, code):
    comm = ll128_comm(monkeypatch, algo)
    try:
        for op in ALL_OPS:
            if not supported(code, op):
                continue
            for count in COUNTS:
                plan = comm._paths.native.plan(count * dtypes.ITEMSIZE[code], code, op)
                assert plan["kernel"] == KERNELS[algo], plan  # whole, or each piece past the region
                for inplace in (False, True):
                    check(comm, code, op, count, seed, inplace,
                          f"{algo} {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} count={count} inplace={inplace}")
    finally:
        comm.close()


LARGE_CASES = ((dtypes.F64, dtypes.SUM), (dtypes.C128, dtypes.PROD), (dtypes.I8, dtypes.BXOR), (dtypes.F16, dtypes.MAX))


@pytest.mark.parametrize("nbytes", [MiB, 16 * MiB, 64 * MiB])
def test_large_sizes(gpu, monkeypatch, seed, nbytes):
    """Up to 64 MiB (odd element counts): past the region's largest message the LL128 kernels in
    pieces, bitwise; with a region large enough, 64 MiB in one two-shot call."""
    for region in (None, 320 * MiB) if nbytes == 64 * MiB else (None,):
        comm = ll128_comm(monkeypatch, "twoshot", region_bytes=region)
        try:
            for code, op in LARGE_CASES:
                count = nbytes // dtypes.ITEMSIZE[code] + 1
                plan = comm._paths.native.plan(count * dtypes.ITEMSIZE[code], code, op)
                assert plan["kernel"] == KERNELS["twoshot"], plan
                if region is not None:
                    assert plan["pieces"] == 1, plan
                check(comm, code, op, count, seed, count % 2 == 1,
                      f"{nbytes} B {dtypes.NAMES[code]} ({plan['pieces']} pieces)")
        finally:
            comm.close()


@pytest.mark.parametrize("algo", ["oneshot", "twoshot"])
def test_cuda_graph_replayed_1000_times(gpu, monkeypatch, algo):
    """A captured LL128 call replayed 1000 times, ordinary calls between replays sharing the device
    epoch: every replay's result is that replay's data (double buffering across replays)."""
    comm = ll128_comm(monkeypatch, algo)
    try:
        stream = cupy.cuda.Stream(non_blocking=True)
        for n in (777, 100003):
            src, buf = cupy.empty(n), cupy.empty(n)
            js = cupy.arange(n, dtype=cupy.float64)
            with stream:
                stream.begin_capture()
                buf[...] = src
                comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM, stream=stream)
                graph = stream.end_capture()
                for k in range(1000):
                    src[...] = (js * 7 + k * 13 + WORLD.rank * 101) % 1999 - 999  # exact in float64
                    graph.launch(stream)
                    if k % 100 == 0:
                        extra = cupy.ones(5)
                        comm.Allreduce(MPI.IN_PLACE, extra, op=MPI.SUM, stream=stream)
                        assert float(extra.sum()) == 5 * WORLD.size
                    want = sum((js * 7 + k * 13 + r * 101) % 1999 - 999 for r in range(WORLD.size))
                    assert bool(cupy.all(buf == want)), f"{algo} n={n} replay {k} wrong"
            stream.synchronize()
    finally:
        comm.close()


@pytest.mark.skipif(WORLD.size < 2, reason="a skipped call needs at least two ranks")
@pytest.mark.parametrize("algo", ["oneshot", "twoshot"])
def test_rank_skipping_a_call_times_out_not_hangs(gpu, monkeypatch, algo):
    comm = ll128_comm(monkeypatch, algo, timeout=1.0)
    try:
        x = cupy.ones(100003)
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        comm.synchronize()
        if WORLD.rank != 0:
            start = time.monotonic()
            comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
            name = "one-shot" if algo == "oneshot" else "two-shot"
            says = rf"rank \d+ timed out .* peer \d+ in allreduce \({name}\)"
            with pytest.raises(hpcolls.CollectiveTimeout, match=says):
                comm.synchronize()
            assert time.monotonic() - start < 10
            with pytest.raises(hpcolls.CommunicatorBroken):
                comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        WORLD.Barrier()
    finally:
        comm.close()
