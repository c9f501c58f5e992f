"""hpcolls' pure-Python parts: type and op tables, buffer specs, settings, the host reduction."""
import numpy as np
import pytest
from mpi4py import MPI

from hpcolls import buffers, config, dtypes
from hpcolls.errors import InvalidBufferError
from hpcolls.reduction import bf16_to_f32, f32_to_bf16, reduce_in_rank_order, step


@pytest.mark.parametrize("mpi_type,code", [(MPI.DOUBLE, dtypes.F64), (MPI.FLOAT, dtypes.F32),
                                           (MPI.C_DOUBLE_COMPLEX, dtypes.C128), (MPI.C_FLOAT_COMPLEX, dtypes.C64),
                                           (MPI.INT, dtypes.I32), (MPI.INT64_T, dtypes.I64),
                                           (MPI.UNSIGNED, dtypes.U32), (MPI.UINT64_T, dtypes.U64),
                                           (MPI.INT8_T, dtypes.I8), (MPI.SIGNED_CHAR, dtypes.I8),
                                           (MPI.UINT8_T, dtypes.U8), (MPI.UNSIGNED_CHAR, dtypes.U8),
                                           (MPI.SHORT, dtypes.I16), (MPI.INT16_T, dtypes.I16),
                                           (MPI.UNSIGNED_SHORT, dtypes.U16), (MPI.UINT16_T, dtypes.U16),
                                           (MPI.C_BOOL, dtypes.BOOL)])
def test_mpi_datatypes_map_to_codes(mpi_type, code):
    assert dtypes.code_of_mpi(mpi_type) == code
    assert dtypes.ITEMSIZE[code] == mpi_type.Get_size()


def test_unsupported_types_and_ops_map_to_none():
    assert dtypes.code_of_mpi(MPI.BYTE) is None  # shares typechar 'B' with MPI.UNSIGNED_CHAR
    assert dtypes.code_of_mpi(MPI.CHAR) is None
    assert dtypes.code_of_numpy(np.float128 if hasattr(np, "float128") else np.object_) is None
    assert dtypes.code_of_numpy("not a dtype") is None
    for op in (MPI.MINLOC, MPI.MAXLOC, MPI.REPLACE, MPI.NO_OP):
        assert dtypes.op_code(op) is None
    ops = (MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX, MPI.BAND, MPI.BOR, MPI.BXOR, MPI.LAND, MPI.LOR, MPI.LXOR)
    assert [dtypes.op_code(o) for o in ops] == list(range(10))
    assert dtypes.mpi_ops_by_code() == ops


def test_native_ops_per_type_follow_mpi():
    """OPS_OF says what MPI itself accepts on the matching MPI datatype: checked against this
    MPI's own Reduce_local, op by op and type by type (it raises MPI_ERR_OP for the others)."""
    mpi_types = {dtypes.F32: MPI.FLOAT, dtypes.F64: MPI.DOUBLE, dtypes.C64: MPI.C_FLOAT_COMPLEX,
                 dtypes.C128: MPI.C_DOUBLE_COMPLEX, dtypes.I8: MPI.INT8_T, dtypes.U8: MPI.UINT8_T,
                 dtypes.I16: MPI.INT16_T, dtypes.U16: MPI.UINT16_T, dtypes.I32: MPI.INT32_T,
                 dtypes.U32: MPI.UINT32_T, dtypes.I64: MPI.INT64_T, dtypes.U64: MPI.UINT64_T,
                 dtypes.BOOL: MPI.C_BOOL}
    for code, mpi_type in mpi_types.items():
        for opc, op in enumerate(dtypes.mpi_ops_by_code()):
            a = np.ones(2, dtype=dtypes.numpy_dtype(code))
            try:
                op.Reduce_local([a.copy(), mpi_type], [a, mpi_type])
                accepted = True
            except MPI.Exception:
                accepted = False
            assert (opc in dtypes.OPS_OF[code]) == accepted, f"{dtypes.NAMES[code]} {dtypes.OP_NAMES[opc]}"
    assert dtypes.OPS_OF[dtypes.F16] == dtypes.OPS_OF[dtypes.BF16] == dtypes.OPS_OF[dtypes.F32]


def test_every_numpy_type_has_a_code_and_size():
    for code, name in enumerate(dtypes.NAMES):
        if name == "bfloat16":
            continue
        assert dtypes.code_of_numpy(name) == code
        assert np.dtype(name).itemsize == dtypes.ITEMSIZE[code]


def test_host_buffers_are_left_to_mpi4py():
    for spec in (np.zeros(3), [np.zeros(3), 2, MPI.DOUBLE], [np.zeros(3), 1, 2, MPI.DOUBLE], bytearray(8), "x",
                 None, MPI.IN_PLACE):
        assert buffers.device_array(spec) is None  # whatever the spec: mpi4py judges host ones


DEV = buffers.DeviceArray(ptr=4096, nbytes=48, dtype=np.dtype(np.float64), device=0)


@pytest.mark.parametrize("spec,want", [
    ("bare", (6, dtypes.F64, 48)),
    (["a", MPI.FLOAT], (12, dtypes.F32, 48)),
    (["a", 5, MPI.DOUBLE], (5, dtypes.F64, 40)),
    (["a", np.int64(2), MPI.C_DOUBLE_COMPLEX], (2, dtypes.C128, 32)),
])
def test_native_buffer_reads_specs_as_mpi4py_does(spec, want):
    got = buffers.native_buffer(spec, DEV)
    assert (got.count, got.code, got.nbytes) == want and got.ptr == DEV.ptr


@pytest.mark.parametrize("spec", [["a"], ["a", 1, 2, MPI.DOUBLE], ["a", "x"], ["a", 1.5, MPI.DOUBLE],
                                  ["a", (2, 0), MPI.DOUBLE], ["a", MPI.LONG_DOUBLE]])
def test_native_buffer_leaves_other_specs_to_mpi(spec):
    # Displacements, vector counts, types the kernels lack: MPI interprets (or rejects) them.
    assert buffers.native_buffer(spec, DEV) is None


@pytest.mark.parametrize("spec,match", [(["a", 6, MPI.DOUBLE], "exceeds"),
                                         (["a", MPI.C_DOUBLE_COMPLEX], "whole number")])
def test_native_buffer_rejects_specs_larger_than_the_array(spec, match):
    with pytest.raises(InvalidBufferError, match=match):
        buffers.native_buffer(spec, DEV._replace(nbytes=40))


@pytest.mark.parametrize("spec,want", [(np.zeros(4), (4, "MPI_DOUBLE")),
                                       ([np.zeros(4), MPI.FLOAT], (8, "MPI_FLOAT")),
                                       ([np.zeros(4, np.int32), 3, MPI.INT], (3, "MPI_INT")),
                                       (np.zeros(5, np.int8), (5, "MPI_SIGNED_CHAR")),
                                       (bytearray(6), (6, "MPI_UNSIGNED_CHAR")),
                                       ([np.zeros(4), (2, 2), [0, 2], MPI.DOUBLE], (None, "MPI_DOUBLE")),
                                       (MPI.IN_PLACE, None)])
def test_signature_is_count_and_datatype(spec, want):
    assert buffers.signature(spec) == want


def test_settings_from_environment(monkeypatch):
    monkeypatch.setenv("HPCOLLS_ALGO", "TwoShot")
    monkeypatch.setenv("HPCOLLS_SCRATCH_BYTES", "1e6")
    monkeypatch.setenv("HPCOLLS_TIMEOUT", "2.5")
    monkeypatch.setenv("HPCOLLS_VALIDATE", "1")
    c = config.Config.from_env(4)
    monkeypatch.setenv("HPCOLLS_LL_MODE", "2")
    monkeypatch.setenv("HPCOLLS_THREADS_PER_BLOCK", "64")
    monkeypatch.delenv("HPCOLLS_DEPENDENT_LAUNCH", raising=False)
    assert config.Config.from_env(4).dependent_launch, "on by default"
    monkeypatch.setenv("HPCOLLS_DEPENDENT_LAUNCH", "0")
    c = config.Config.from_env(4)
    assert (c.algo, c.scratch_bytes, c.timeout_s, c.validate, c.ll_mode, c.threads_per_block, c.dependent_launch) == (
        "twoshot", 1000000, 2.5, True, 2, 64, False)
    assert config.Config.from_env(4, algo="nccl", timeout=1, validate=False).algo == "nccl"


def test_settings_overridden_for_a_block_then_restored(monkeypatch):
    from hpcolls import settings
    monkeypatch.setenv("HPCOLLS_HIERARCHY", "slices")
    monkeypatch.delenv("HPCOLLS_NODE_SIZE", raising=False)
    with settings.overridden({"HPCOLLS_HIERARCHY": "leaders", "HPCOLLS_NODE_SIZE": "2"}):
        assert config.Config.from_env(4).hierarchy == "leaders" and settings.get("HPCOLLS_NODE_SIZE") == 2
    assert settings.get("HPCOLLS_HIERARCHY") == "slices" and not settings.is_set("HPCOLLS_NODE_SIZE")
    with pytest.raises(KeyError, match="HPCOLLS_NODESIZE"), settings.overridden({"HPCOLLS_NODESIZE": "2"}):
        pass


@pytest.mark.parametrize("var,value,match", [("HPCOLLS_ALGO", "fast", "not one of"),
                                              ("HPCOLLS_SCRATCH_BYTES", "lots", "not a number"),
                                              ("HPCOLLS_ONESHOT_MAX_BYTES", "-1", ">= 0"),
                                              ("HPCOLLS_TIMEOUT", "0", "positive"),
                                              ("HPCOLLS_SCRATCH_BYTES", str(9 << 30), "over the 8 GiB"),
                                              ("HPCOLLS_LL_MODE", "4", "not one of 0..3"),
                                              ("HPCOLLS_THREADS_PER_BLOCK", "100", "multiple of 32"),
                                              ("HPCOLLS_THREADS_PER_BLOCK", "2048", "multiple of 32")])
def test_bad_settings_are_clear_errors(monkeypatch, var, value, match):
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=match):
        config.Config.from_env(2)


def test_selection_table_is_monotone_and_covers_every_rank_count():
    previous = None
    for n in range(1, 33):
        one, two = config.thresholds(n)
        assert 0 < one <= two
        if previous:
            assert one <= previous[0]
        previous = (one, two)


def test_rank_order_sum_matches_sequential_numpy():
    rng = np.random.default_rng()
    xs = [rng.standard_normal(1000) for _ in range(5)]
    want = xs[0].copy()
    for x in xs[1:]:
        want = want + x
    assert np.array_equal(reduce_in_rank_order(dtypes.F64, dtypes.SUM, xs), want)


def test_min_max_propagate_first_nan_and_keep_earlier_on_ties():
    a = np.array([np.nan, 1.0, 0.0, -0.0, 2.0])
    b = np.array([3.0, np.nan, -0.0, 0.0, 1.0])
    mn = step(dtypes.F64, dtypes.MIN, a, b)
    assert np.isnan(mn[0]) and np.isnan(mn[1])
    assert np.signbit(mn[2]) == np.signbit(a[2]) and np.signbit(mn[3]) == np.signbit(a[3])
    assert mn[4] == 1.0
    assert step(dtypes.F64, dtypes.MAX, a, b)[4] == 2.0


def test_complex_product_is_the_textbook_formula():
    rng = np.random.default_rng()
    a = rng.standard_normal(100) + 1j * rng.standard_normal(100)
    b = rng.standard_normal(100) + 1j * rng.standard_normal(100)
    got = step(dtypes.C128, dtypes.PROD, a, b)
    assert np.allclose(got, a * b, rtol=1e-15, atol=0)
    with pytest.raises(ValueError, match="complex"):
        step(dtypes.C128, dtypes.MIN, a, b)


def test_bfloat16_round_trip_and_rounding():
    exact = np.array([1.0, -2.5, 0.0, -0.0, np.inf, 3.140625], dtype=np.float32)
    assert np.array_equal(bf16_to_f32(f32_to_bf16(exact)), exact)
    # 1 + 2^-8 lies halfway between two bfloat16 values: ties go to the even one (1.0).
    assert bf16_to_f32(f32_to_bf16(np.array([1 + 2**-8], dtype=np.float32)))[0] == 1.0
    assert bf16_to_f32(f32_to_bf16(np.array([1 + 3 * 2**-8], dtype=np.float32)))[0] == 1 + 2**-6
    assert np.isnan(bf16_to_f32(f32_to_bf16(np.array([np.nan], dtype=np.float32))))[0]


def test_integer_sum_wraps_like_the_kernels():
    big = np.array([np.iinfo(np.int32).max], dtype=np.int32)
    assert reduce_in_rank_order(dtypes.I32, dtypes.SUM, [big, np.array([1], dtype=np.int32)])[0] == np.iinfo(np.int32).min


def test_stream_arguments_read_as_handles():
    """stream= as the Allreduce method (and the native entry, for int and `ptr`) reads it: an
    integer, else the first integer of `ptr`, `cuda_stream`, `handle`; anything else is refused."""
    from hpcolls.streams import stream_ptr as _stream_ptr

    class Attrs:
        def __init__(self, **kw):
            vars(self).update(kw)

    assert _stream_ptr(0) == 0 and _stream_ptr(12345) == 12345
    assert _stream_ptr(Attrs(ptr=7, cuda_stream=8)) == 7
    assert _stream_ptr(Attrs(ptr="not an int", cuda_stream=8, handle=9)) == 8
    assert _stream_ptr(Attrs(handle=9)) == 9
    with pytest.raises(ValueError, match="non-negative"):
        _stream_ptr(-1)
    with pytest.raises(ValueError, match="non-negative"):
        _stream_ptr(Attrs(ptr=-5))
    with pytest.raises(TypeError, match="cannot use str as a CUDA stream"):
        _stream_ptr("s")


def test_the_method_table_holds_every_buffer_method_of_mpi4py():
    import inspect

    from hpcolls import methods
    from hpcolls.communicator import Communicator, Message, _Topocomm
    # Host-only by nature: the lower-case pickle calls' optional receive buffer, Bsend's attached buffer.
    host_only = {"recv", "irecv", "sendrecv", "Attach_buffer"}
    for owner, wrapped, table in ((MPI.Comm, Communicator, methods.METHODS), (MPI.Intracomm, Communicator, methods.METHODS),
                                  (MPI.Topocomm, _Topocomm, methods.METHODS), (MPI.Message, Message, methods.MESSAGE_METHODS)):
        for name, member in vars(owner).items():
            if name.startswith("_") or name in host_only or not callable(member):
                continue
            try:
                params = inspect.signature(member).parameters
            except (TypeError, ValueError):
                continue
            if {"buf", "sendbuf", "recvbuf"} & set(params):
                assert name in table, f"{owner.__name__}.{name} is not in hpcolls.methods"
                assert getattr(wrapped, name) is not member, f"{name} is mpi4py's, not hpcolls'"


def test_roles_follow_the_root():
    from hpcolls import methods
    bcast, gather = methods.METHODS["Bcast"], methods.METHODS["Gather"]
    assert bcast.roles(("b", 1), {}, 1) == ({"buf": "r"}, set())
    assert bcast.roles(("b",), {"root": 1}, 0) == ({"buf": "w"}, set())
    assert gather.roles(("s", "r"), {}, 0) == ({"sendbuf": "r", "recvbuf": "w"}, set())
    assert gather.roles(("s", "r", 0), {}, 2) == ({"sendbuf": "r"}, {"recvbuf"})
    assert gather.roles((MPI.IN_PLACE, "r", 0), {}, 0) == ({"recvbuf": "w"}, set())
    kinds = {m.name: m.completion for m in methods.METHODS.values()}
    assert (kinds["Irecv"], kinds["Iallreduce"], kinds["Ineighbor_alltoallw"], kinds["Scan_init"], kinds["Scan"]) == (
        "nonblocking", "nonblocking", "nonblocking", "persistent", "blocking")


def test_staging_pool_reuses_its_blocks(monkeypatch):
    from hpcolls.staging import pool as staging
    made = []

    def alloc(n):
        made.append(n)
        return bytearray(n)
    monkeypatch.setattr(staging, "_pinned_allocator", lambda: alloc)
    pool = staging.StagingPool("pinned")
    a, block = pool.take(1000, np.dtype(np.float64))
    assert a.dtype == np.float64 and a.nbytes == 1000 // 8 * 8 and made == [1024]
    pool.give_back(block)
    b, again = pool.take(600, np.dtype(np.int8))
    assert again is block and b.nbytes == 600 and made == [1024]
    c, other = pool.take(100, np.dtype(np.uint8))
    assert other is not block and made == [1024, 256]
    pageable = staging.StagingPool("pageable")
    d, _ = pageable.take(64, np.dtype(np.float32))
    assert pageable.kind == "pageable" and d.size == 16 and made == [1024, 256]


def test_readme_settings_table_is_the_registry():
    from pathlib import Path

    from hpcolls import settings
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert settings.markdown_table() in readme, "README's table differs: paste settings.markdown_table()"


def test_drop_in_route_table_is_the_code_s():
    from pathlib import Path

    from hpcolls import routes
    page = (Path(__file__).resolve().parents[2] / "docs/DROP_IN.md").read_text()
    assert routes.route_table() in page, "docs/DROP_IN.md's route table differs: paste routes.route_table()"


@pytest.mark.parametrize("op", [dtypes.BAND, dtypes.BOR, dtypes.BXOR, dtypes.LAND, dtypes.LOR, dtypes.LXOR])
def test_the_host_reduction_has_mpis_bitwise_and_logical_ops_on_integers_only(op):
    a, b = np.array([6, 3, 0, -1], dtype=np.int32), np.array([5, 0, 0, 7], dtype=np.int32)
    want = {dtypes.BAND: a & b, dtypes.BOR: a | b, dtypes.BXOR: a ^ b, dtypes.LAND: np.array([1, 0, 0, 1]),
            dtypes.LOR: np.array([1, 1, 0, 1]), dtypes.LXOR: np.array([0, 1, 0, 0])}[op]
    got = step(dtypes.I32, op, a, b)
    assert got.dtype == np.int32 and np.array_equal(got, want)  # logical ops: 0 or 1 in the operands' type
    with pytest.raises(ValueError, match=f"{dtypes.OP_NAMES[op].upper()} is not defined for float16"):
        reduce_in_rank_order(dtypes.F16, op, [a.astype(np.float16)] * 2)
