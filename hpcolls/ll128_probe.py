"""LL128's torn-line probe at a communicator's set-up, and the verdict every rank agrees on.

LL128 lines (native/include/hpcolls/ll128_line.cuh) carry 120 payload bytes under one flag word,
which is sound only where a 128-byte line stored by one warp reaches its reader as one unit. No
document promises that, so each communicator's native path runs the device probe
(native/hpcolls/ll128_probe.cu) over its own scratch and peers before LL128 may be selected: every
rank writes lines into every peer's LL128 region and reads what every peer writes into its own,
for HPCOLLS_LL128_PROBE_MS milliseconds, and counts torn lines. LL128 is on only when every rank's
run was complete and found none; anything else (a torn or stale line, a time-out, an error, a
rank without the region) turns it off on every rank, with the reason logged. The verdict is one
allgather, so no rank can leave it thinking otherwise; a probe that fails never raises here.
"""
import secrets

from . import log

# A run that could not race its reader against its writers proves nothing: each writer must
# complete at least this many passes over its lines (a 10 ms probe completes thousands).
MIN_PASSES = 16
# The LL128 region's index in hpcolls._native.PROTOCOLS (NativeComm.region_bytes takes it).
LL128_PROTOCOL = 2
# Every wait of the probe (a peer's start, its writer's end) is bounded by this many seconds; only
# a probe that fails takes that long.
WAIT_S = 2.0


def local_verdict(report, error=None):
    """Why this rank's probe does not allow LL128 (None: it does). `report`: the dict
    NativeComm.probe_ll128 returns; `error`: the text of an exception it raised instead."""
    if error:
        return f"the probe failed: {error}"
    if report is None:
        return "the probe did not run"
    if report["timed_out"]:
        return f"{report['timed_out']} of its waits timed out (a peer's probe never started or never finished)"
    if report["torn"]:
        return (f"{report['torn']} torn lines in {report['observed']} line reads: a 128-byte line did not arrive "
                "as one unit")
    if report["stale"]:
        return f"{report['stale']} lines did not hold the writer's last pass after it said it was done"
    if report["min_iterations"] < MIN_PASSES:
        return f"a writer completed only {report['min_iterations']} passes (fewer than {MIN_PASSES}: inconclusive)"
    if report["observed"] == 0:
        return "the readers saw no line of this run (inconclusive)"
    return None


def agree(comm, reason):
    """(on, why) from every rank's local verdict (None: this rank allows LL128), the same on every
    rank: on only if no rank has a reason, else why names the first rank that has one. One
    allgather; collective."""
    reasons = comm.allgather(reason)
    for rank, why in enumerate(reasons):
        if why:
            return False, (why if rank == comm.Get_rank() else f"rank {rank}: {why}")
    return True, None


def summary(report):
    """One line of what a probe run tested, for the log and the tool."""
    return (f"{report['pairs']} peer pair(s) x {report['lines_per_pair']} lines, {report['iterations']} writer passes "
            f"(fewest {report['min_iterations']}), {report['observed']} line reads, {report['torn']} torn, "
            f"{report['stale']} stale, {report['timed_out']} timed out, {report['seconds'] * 1e3:.1f} ms")


def run(comm, nc, write_ms, wait_s=WAIT_S):
    """Runs the probe on every rank of `comm` over `nc`'s LL128 region; (report or None, local
    reason or None). Collective: every rank calls it. The probe's stores share the LL128 region with
    the kernels, so no call of `nc` may be in flight: each rank waits for its last call, then the
    ranks meet, then they probe (the tag, fresh for each run, tells this run's lines from any
    earlier run's)."""
    tag = comm.bcast(secrets.randbits(31) if comm.Get_rank() == 0 else None, root=0)
    # Every rank lays the lines out in the same area: the smallest rank's region (a rank's writer
    # must not store past a peer's region).
    area = min(comm.allgather(nc.region_bytes(LL128_PROTOCOL)))
    error = None
    try:
        nc.synchronize()
    except Exception as exc:  # noqa: BLE001 - agreed below: a rank that cannot probe turns LL128 off
        error = f"waiting for the last call failed: {exc}"
    # Every rank's wait is over before any rank's probe stores into its region; a rank that cannot
    # probe says so here, and then no rank probes (a lone prober would only time out).
    error = agree(comm, error)[1]
    report = None
    if error is None:
        try:
            report = nc.probe_ll128(tag, write_ms / 1e3, wait_s, area)
        except Exception as exc:  # noqa: BLE001
            error = str(exc)
    return report, local_verdict(report, error)


def decide(comm, nc, write_ms, why_not=None):
    """Sets `nc`'s LL128 availability from the agreed verdict of a probe run (or from `why_not`, a
    reason this rank has not to probe at all, e.g. no LL128 region); returns (on, why). Never raises
    for the probe's own failures; collective."""
    skip = agree(comm, why_not)[1]
    if skip:
        on, why = False, skip
        report = None
    else:
        report, reason = run(comm, nc, write_ms)
        on, why = agree(comm, reason)
    nc.set_ll128_available(on)
    tested = f" ({summary(report)})" if report is not None else ""
    if on:
        log.info(f"LL128 on: the torn-line probe found every line whole{tested}")
    elif skip:
        log.info(f"LL128 off: {why}")
    else:  # the probe ran and did not show lines whole: worth saying once, whatever the level
        log.warn_once("ll128 off", f"LL128 off: {why}{tested}; the calls take LL or sentinel")
    return on, why
