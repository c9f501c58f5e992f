"""A communicator's set-up refuses a CUDA-graph capture on every rank when any rank captures
(hpcolls/capture.py): the ranks that do not capture raise too, naming the ranks that do, instead
of waiting in the set-up's collectives for ranks that refused it. The decision given each rank's
capture state runs here under real MPI; tests/gpu/test_hpcolls_protocol_gpu.py captures for real."""
import pytest

import hpcolls
from hpcolls.capture import check_capture

WHAT, ADVICE = "a test's set-up", "capture elsewhere"


def test_one_capturing_rank_fails_every_rank(comm):
    last = comm.size - 1
    capturing = comm.rank == last
    with pytest.raises(hpcolls.GraphCaptureError) as e:
        check_capture(capturing, WHAT, ADVICE, comm)
    text = str(e.value)
    assert WHAT in text and ADVICE in text and "every rank refuses it" in text
    if capturing:
        assert f"this call's stream (capturing: rank(s) [{last}]) is being captured" in text
    else:
        assert f"the streams of rank(s) [{last}] are being captured" in text


def test_every_capturing_rank_is_named(comm):
    if comm.size < 2:
        pytest.skip("needs two ranks: one that captures and one that names it")
    capturing = comm.rank % 2 == 0
    with pytest.raises(hpcolls.GraphCaptureError) as e:
        check_capture(capturing, WHAT, ADVICE, comm)
    evens = list(range(0, comm.size, 2))
    assert f"rank(s) {evens}" in str(e.value)
    assert ("this call's stream" in str(e.value)) == capturing


def test_no_capture_passes_on_every_rank(comm):
    check_capture(False, WHAT, ADVICE, comm)
    assert comm.allgather("passed") == ["passed"] * comm.size


def test_without_a_communicator_only_the_capturing_rank_raises(comm):
    capturing = comm.rank == 0
    raised = False
    try:
        check_capture(capturing, WHAT, ADVICE)
    except hpcolls.GraphCaptureError as e:
        raised = True
        assert "this call's stream is being captured" in str(e) and "every rank" not in str(e)
    assert comm.allgather(raised) == [r == 0 for r in range(comm.size)]
