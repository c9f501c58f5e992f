"""The LL128 probe's verdict is agreed: LL128 is on only when every rank's probe ran complete and
clean, and one rank's torn line, time-out, error or missing region turns it off on every rank,
the reason naming that rank. Runs on CPU under `mpiexec -n 1..4` with a stand-in for the native
communicator (the device probe itself runs in tests/gpu/test_hpcolls_ll128_gpu.py)."""
import re

import pytest

from hpcolls import ll128_probe


def clean_report():
    return {"lines": 256, "iterations": 5000, "min_iterations": 5000, "observed": 100_000, "torn": 0,
            "stale": 0, "timed_out": 0, "lines_per_pair": 256, "pairs": 1, "seconds": 0.012}


class StandIn:
    """What decide() uses of a NativeComm; `outcome`: a report dict, or an exception to raise."""

    def __init__(self, outcome, region=16 << 20):
        self.outcome = outcome
        self.region = region
        self.probed = []
        self.available = None

    def synchronize(self):
        pass

    def region_bytes(self, protocol):
        assert protocol == ll128_probe.LL128_PROTOCOL
        return self.region

    def probe_ll128(self, tag, write_s, wait_s, area_bytes):
        self.probed.append((tag, write_s, wait_s, area_bytes))
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome

    def set_ll128_available(self, on):
        self.available = on


def outcome_for(rank, culprit, kind):
    report = clean_report()
    if rank != culprit:
        return report
    if kind == "error":
        return RuntimeError("hpcolls: cudaStreamSynchronize(LL128 probe) failed: cudaErrorLaunchFailure")
    report.update({"torn": {"torn": 3}, "timed_out": {"timed_out": 1}, "stale": {"stale": 2},
                   "short": {"min_iterations": 3}}.get(kind, {}))
    return report


def test_every_rank_clean_turns_ll128_on(comm):
    # Regions of different sizes: every rank probes the smallest one's bytes (the same layout).
    nc = StandIn(clean_report(), region=(16 << 20) + 4096 * comm.Get_rank())
    on, why = ll128_probe.decide(comm, nc, write_ms=10)
    assert (on, why, nc.available) == (True, None, True)
    tags = comm.allgather(nc.probed[0][0])
    assert len(set(tags)) == 1 and 0 <= tags[0] < 2**31, "every rank probes with the same fresh tag"
    assert nc.probed[0][1:] == (0.01, ll128_probe.WAIT_S, 16 << 20)
    nc2 = StandIn(clean_report())
    ll128_probe.decide(comm, nc2, write_ms=10)
    assert comm.allgather(nc2.probed[0][0]) != tags, "a fresh tag each run"


class FailingWait(StandIn):
    def synchronize(self):
        raise RuntimeError("hpcolls: rank 0 timed out after 1 s waiting for peer 1")


def test_a_rank_whose_last_call_failed_keeps_every_rank_from_probing(comm):
    culprit = comm.Get_size() - 1
    nc = (FailingWait if comm.Get_rank() == culprit else StandIn)(clean_report())
    on, why = ll128_probe.decide(comm, nc, write_ms=10)
    assert on is False and nc.probed == [] and "waiting for the last call failed" in why


@pytest.mark.parametrize("kind,says", [("torn", "3 torn lines"), ("timed_out", "timed out"),
                                       ("stale", "did not hold the writer's last pass"),
                                       ("short", "inconclusive"),
                                       ("error", "the probe failed: .*cudaErrorLaunchFailure")])
def test_one_rank_failing_turns_ll128_off_everywhere(comm, kind, says):
    culprit = comm.Get_size() - 1
    nc = StandIn(outcome_for(comm.Get_rank(), culprit, kind))
    on, why = ll128_probe.decide(comm, nc, write_ms=10)
    assert on is False and nc.available is False
    assert why is not None
    assert re.search(says, why), why
    if comm.Get_rank() != culprit:
        assert why.startswith(f"rank {culprit}: "), why
    assert len(set(comm.allgather(why))) <= 2, "every rank but the culprit reads the same reason"


def test_a_rank_that_cannot_probe_keeps_every_rank_from_probing(comm):
    culprit = comm.Get_size() - 1
    nc = StandIn(clean_report())
    why_not = "no LL128 region" if comm.Get_rank() == culprit else None
    on, why = ll128_probe.decide(comm, nc, write_ms=10, why_not=why_not)
    assert on is False and nc.available is False and nc.probed == []
    assert "no LL128 region" in why


def test_agree_is_collective_and_ordered(comm):
    """The first rank with a reason is named, on every rank."""
    reasons = [None] * comm.Get_size()
    if comm.Get_size() > 2:
        reasons[-1] = "last"
    if comm.Get_size() > 1:
        reasons[1] = "second"
    on, why = ll128_probe.agree(comm, reasons[comm.Get_rank()])
    if comm.Get_size() == 1:
        assert (on, why) == (True, None)
    else:
        assert on is False
        assert why == ("second" if comm.Get_rank() == 1 else "rank 1: second")
