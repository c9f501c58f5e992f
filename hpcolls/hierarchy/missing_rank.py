"""How every rank of a hierarchical communicator learns *which* rank is missing from a call.

In a flat native call every rank waits for every peer, so whoever times out names the missing
rank itself. Across the hierarchy a rank waits only for some: a node's ranks for their node's
peers, the ranks of one local index for their counterparts on the other nodes. When rank 3 skips
a call, rank 2 (its node peer) waits for rank 3, rank 0 (across the nodes) waits for rank 2, and
rank 1 waits on its node for rank 0: each sees only the next link of the chain.

So every rank that gives up on a call posts a **notice** to every other rank of the communicator
(a pickled tuple on a duplicate of it, nonblocking sends never waited for): the call's number (the
ranks count the hierarchical calls alike), itself, the ranks it waited for in vain, and the step.
Then it **follows the chain**: for each rank it waited for, it looks for that rank's notice about
the same call; a rank that posted one was there, waiting in turn, and the ranks *it* waited for
are followed next; a rank that posts none within the grace period (one more HPCOLLS_TIMEOUT
from the moment this rank gave up) never came: that is the missing rank, and every rank names
the same one. A rank waiting on the host (an MPI step of the hierarchy) also reads the notices as
it polls, and stops at once when one arrives for its call: the error reaches it without its own
time-out. Cost: nothing on a call that succeeds (no message is sent); at most two time-outs on
one that fails.

What a rank that only waits on the GPU (a node's peer in the last intra-node step) learns comes
at its next call or `synchronize()`, when its kernel's time-out surfaces: it posts and follows the
chain then, for the call the time-out belongs to. Nobody waits for such a rank itself (every
present rank stores its data at its kernels' start), so the chain never needs its notice in time.
"""
import time

from mpi4py import MPI

_TAG = 28


class Notice(tuple):
    """(call, observer, suspects, step): `observer` gave up on call number `call` waiting for
    `suspects` (ranks of the communicator) in `step`."""

    call = property(lambda self: self[0])
    observer = property(lambda self: self[1])
    suspects = property(lambda self: self[2])
    step = property(lambda self: self[3])


class Missing(Exception):
    """Raised inside a hierarchical call by a bounded wait that ended without `suspects` (ranks of
    the hierarchical communicator) in `step`; `call`, when known, is the call it belongs to (a GPU
    time-out can surface calls later); `early`: stopped on another rank's notice, not a time-out."""

    def __init__(self, suspects, step, call=None, early=False):
        super().__init__(f"waiting for {suspects} in {step}")
        self.suspects, self.step, self.call, self.early = tuple(suspects), step, call, early


class FailureChannel:
    """The notices of one hierarchical communicator (collective to create: it duplicates `comm`)."""

    def __init__(self, comm):
        self.comm = comm.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self._notices = {}   # (call, observer) -> Notice
        self._sends = []     # requests of our notices, until they complete

    def poll(self):
        """Receives the notices that have arrived (never waits)."""
        status = MPI.Status()
        while self.comm.iprobe(MPI.ANY_SOURCE, _TAG, status):
            notice = Notice(self.comm.recv(source=status.Get_source(), tag=_TAG))
            self._notices[(notice.call, notice.observer)] = notice

    def failed(self, call):
        """A notice about call `call` (or an earlier one), or None."""
        self.poll()
        return next((n for (c, _), n in sorted(self._notices.items()) if c <= call), None)

    def post(self, call, suspects, step):
        notice = (call, self.rank, tuple(suspects), step)
        self._notices[(call, self.rank)] = Notice(notice)
        self._sends = [r for r in self._sends if not r.Test()]
        self._sends += [self.comm.isend(notice, dest, _TAG) for dest in range(self.size) if dest != self.rank]

    def resolve(self, call, suspects, step, grace_s):
        """Posts this rank's notice, follows the chain of waits of call `call` and returns
        (missing ranks, the notices followed, ranks that named this one): see the module's text.
        With no `suspects` (this rank finished that call; it learnt of the failure later) it
        follows the other ranks' notices about the call."""
        self.post(call, suspects, step)
        deadline = time.monotonic() + grace_s
        missing, followed, seen = [], [], {self.rank}
        frontier = list(suspects) or sorted({p for (c, o), n in self._notices.items() if c == call and o != self.rank
                                             for p in (o, *n.suspects)})
        while frontier:
            peer = frontier.pop(0)
            if peer in seen:
                continue
            seen.add(peer)
            notice = self._await(call, peer, deadline)
            if notice is None:
                missing.append(peer)
            else:
                followed.append(notice)
                frontier.extend(notice.suspects)
        self.poll()
        named_me = sorted(n.observer for (c, _), n in self._notices.items()
                          if c == call and self.rank in n.suspects and n.observer != self.rank)
        return sorted(missing), followed, named_me

    def _await(self, call, peer, deadline):
        while True:
            self.poll()
            notice = self._notices.get((call, peer))
            if notice is not None or time.monotonic() > deadline:
                return notice
            time.sleep(1e-4)

    def free(self):
        """Local: our notices are small (sent eagerly); a peer that never reads them does not
        hold this up."""
        self.comm.Free()
