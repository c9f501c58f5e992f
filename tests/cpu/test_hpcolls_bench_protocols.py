"""The benchmark's --protocol rows, as far as its arguments decide them without a GPU: each
protocol forced is an algorithm of its own, beside auto and the device-to-device copy floor."""
import pytest

from hpcolls.tools.bench import cli, runners


def test_protocol_rows_join_the_algorithms_with_auto_and_the_copy_floor():
    args = cli.parse_args(["--coll", "allreduce,allgather", "--protocol", "ll,sentinel,ll128,auto",
                           "--algos", "nccl", "--max-bytes", str(64 << 20), "--factor", "2"])
    assert args.algo_list == ["nccl", "ll", "sentinel", "ll128", "auto", "copy"]
    assert list(cli.steps(args))[-1] == 64 << 20 and list(cli.steps(args))[0] == 8
    default = cli.parse_args(["--protocol", "sentinel"])
    assert default.algo_list == [*cli.DEFAULT_ALGOS, "sentinel", "copy"]  # auto already there
    assert "copy" not in cli.parse_args([]).algo_list


def test_protocol_rows_are_hpcolls_rows_named_as_the_plan_names_them():
    assert set(runners.PROTOCOL_ALGOS) <= set(runners.HPCOLLS_ALGOS) <= set(runners.GPU_ALGOS)
    assert "copy" in runners.GPU_ALGOS and "copy" not in runners.HPCOLLS_ALGOS
    _native = pytest.importorskip("hpcolls._native", reason="the native module is not built")
    assert sorted(runners.PLAN_PROTOCOL.values()) == sorted(_native.PROTOCOLS)


def test_an_unknown_protocol_is_refused(capsys):
    with pytest.raises(SystemExit):
        cli.parse_args(["--protocol", "ll,simple"])
    assert "simple not among" in capsys.readouterr().err
