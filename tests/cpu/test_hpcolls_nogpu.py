"""hpcolls on a machine with no GPU: imports, says False, and raises one clear error."""
import os
import subprocess
import sys

import pytest

import hpcolls


def test_gpu_available_is_false_without_gpu():
    if os.path.exists("/dev/nvidia0"):
        pytest.skip("this machine has a GPU; the no-GPU behaviour is checked on CPU-only machines")
    assert hpcolls.gpu_available() is False
    assert hpcolls.device_count() == 0


def test_native_module_is_built_and_imports():
    assert hpcolls.native_available(), "hpcolls._native was not built (nvcc must be available at install)"
    from hpcolls import _native
    assert _native.CUDART_VERSION_BUILT >= 12000
    assert _native.MAX_RANKS >= 8


def test_gpu_call_without_gpu_raises_clear_error():
    if hpcolls.gpu_available():
        pytest.skip("a GPU is visible")
    from hpcolls import _native
    with pytest.raises(hpcolls.NoDeviceError, match="no CUDA device visible"):
        _native.NativeComm(0, 1, 0, 1 << 20, 1.0, 1)
    with pytest.raises(hpcolls.NoDeviceError, match="no CUDA device visible"):
        _native.require_device()


def test_diagnostic_probe_without_gpu_raises_clear_error():
    """The diagnostic module's launch probes raise the default module's NoDeviceError."""
    if hpcolls.gpu_available():
        pytest.skip("a GPU is visible")
    diag = pytest.importorskip("hpcolls._native_diag", reason="the diagnostic module is built only with HPCOLLS_DIAGNOSTICS=1")
    with pytest.raises(hpcolls.NoDeviceError, match="no CUDA device visible"):
        diag.launch_noop_dependent(0)


def test_a_diagnostic_ll_mode_without_the_diagnostic_module_says_what_to_build():
    """HPCOLLS_LL_MODE=1..3 with no hpcolls._native_diag: open_native raises (on every rank)
    this reason; mode 0 needs nothing (tests/gpu/test_hpcolls_allreduce_gpu.py runs it on a GPU)."""
    from hpcolls.peer_group import _diagnostics_missing
    assert _diagnostics_missing(0) is None
    try:
        import hpcolls._native_diag  # noqa: F401
        pytest.skip("the diagnostic module is built")
    except ImportError:
        pass
    for mode in (1, 2, 3):
        why = _diagnostics_missing(mode)
        assert f"HPCOLLS_LL_MODE={mode}" in why and "needs the diagnostic build" in why
        assert "HPCOLLS_DIAGNOSTICS=1" in why


def test_default_module_has_no_diagnostic_variants():
    """LL modes 1..3, launch probes and peek/poke live in hpcolls._native_diag only."""
    from hpcolls import _native
    for name in ("launch_noop", "launch_noop_with_allreduce_args", "launch_noop_dependent"):
        assert not hasattr(_native, name), name
    for name in ("debug_peek", "debug_poke"):
        assert not hasattr(_native.NativeComm, name), name


def _run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "hpcolls", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def test_version_and_info_cli():
    out = _run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"hpcolls {hpcolls.__version__}"
    info = _run("info")
    assert info.returncode == 0, info.stderr
    for key in ("hpcolls", "CUDA: runtime", "NCCL:", "MPI:", "MPI CUDA-aware:", "GPUs visible:", "rank -> GPU",
                "scratch=", "small-message kernel at 2, 4, 8 ranks: a block per 4096 B"):
        assert key in info.stdout, f"{key!r} missing from `python -m hpcolls info`:\n{info.stdout}"


def test_debug_logging_is_rank_prefixed_on_stderr():
    code = "import hpcolls; hpcolls.log.info('hello'); hpcolls.log.trace('hidden')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "HPCOLLS_DEBUG": "INFO", "OMPI_COMM_WORLD_RANK": "3"})
    assert out.returncode == 0
    assert out.stdout == ""
    assert ":3 hpcolls INFO hello" in out.stderr
    assert "hidden" not in out.stderr


def test_bad_debug_level_warns_and_falls_back():
    out = subprocess.run([sys.executable, "-c", "import hpcolls"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "HPCOLLS_DEBUG": "LOUD"})
    assert out.returncode == 0
    assert "HPCOLLS_DEBUG='LOUD' is not one of" in out.stderr
