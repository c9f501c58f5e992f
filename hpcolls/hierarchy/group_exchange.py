"""Bounded exchanges of host arrays among a group of ranks: the inter-node step of the hierarchy.

MPI can wait for ever (a rank that never comes leaves a blocking call, or a collective request,
hanging), and its collectives do not promise a reduction order. So the hierarchy's MPI steps are
point-to-point messages only, posted nonblocking and polled against a deadline
(HPCOLLS_TIMEOUT from the start of each wait): every message says who it comes from, so at the
deadline the ranks whose messages are missing are known by name, and any combining is done by
the caller in an order it fixes (hpcolls/hierarchy/path.py). While it polls, a wait also
reads the communicator's failure notices (hpcolls/hierarchy/missing_rank.py) and stops when one arrives for
its call. A wait that ends without its messages raises `Missing` naming the absent ranks; their
receives are cancelled; sends still pending are kept, with their buffers, for the rest of the
process (MPI may still read them; only a failed call leaves any).

The exchanges are the direct ones (every rank sends to every rank that needs its data, in one
round): one network latency each, the best for the few nodes and small messages this path carries.
As in the native kernels' protocol, every rank of an exchange hears from every other rank it deals
with: where data flows one way only (bcast, gather) the other way carries an empty message, so a
rank that sends only still learns of a peer that never came.
"""
import time

import numpy as np
from mpi4py import MPI

from .missing_rank import Missing

_TAG = 29
_NOTICE_EVERY_S = 1e-4  # how often a poll also reads the failure notices
_SPIN_S = 2e-4          # polls back to back this long, then lets other processes run between polls
_ABANDONED = []         # pending sends of failed exchanges
_ARRIVED = np.empty(0, np.uint8)  # the empty message a rank sends to say it has come


class GroupExchange:
    """Point-to-point collectives over `comm` (a group: one node, or one local index across the
    nodes), whose rank j is rank `members[j]` of the hierarchical communicator (the name errors
    use). `failures` is the communicator's FailureChannel (None: the waits read no notices), `where`
    names the group in errors."""

    def __init__(self, comm, members, failures, timeout_s, where, tag=_TAG):
        self.comm, self.members, self.failures = comm, list(members), failures
        self.timeout_s, self.where, self.tag = timeout_s, where, tag
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.call = 0          # the hierarchical call being served: set by the caller

    def detached(self, tag):
        """The same exchange on its own `tag` and deaf to the failure notices: for a step that runs
        on another thread beside this one's exchanges (a captured call's host step runs on CUDA's
        host-function thread), so that neither takes the other's messages."""
        return GroupExchange(self.comm, self.members, None, self.timeout_s, self.where, tag)

    def exchange(self, sends, recvs, what):
        """Sends {group rank: host array} and receives {group rank: host array}, all at once,
        bounded (`what` names the step in errors)."""
        requests, sources = [], []
        # As bytes: MPI need not know the element type (Open MPI 4.1 has no float16).
        for peer, buf in recvs.items():
            requests.append(self.comm.Irecv([buf, MPI.BYTE], peer, self.tag))
            sources.append(peer)
        for peer, buf in sends.items():
            requests.append(self.comm.Isend([buf, MPI.BYTE], peer, self.tag))
            sources.append(peer)
        self._wait(requests, sources, len(recvs), what)

    def allgather(self, mine, out):
        """out[j] = group rank j's `mine` (out: an array with a first axis of the group's size)."""
        out[self.rank] = mine
        others = [p for p in range(self.size) if p != self.rank]
        self.exchange({p: mine for p in others}, {p: out[p] for p in others}, "exchange")

    def bcast(self, buf, root):
        """The root's `buf` into every rank's. Each receiver also tells the root it has come (an
        empty message), so that the root, too, learns of a receiver that never does."""
        others = [p for p in range(self.size) if p != root]
        if self.rank == root:
            arrived = np.empty((len(others), 0), np.uint8)
            self.exchange({p: buf for p in others}, dict(zip(others, arrived)), "broadcast")
        else:
            self.exchange({root: _ARRIVED}, {root: buf}, "broadcast")

    def gather(self, mine, out, root):
        """At `root`, out[j] = group rank j's `mine`; elsewhere `out` is not used. The root tells
        each sender it has come (an empty message), as bcast's receivers do."""
        others = [p for p in range(self.size) if p != root]
        if self.rank != root:
            self.exchange({root: mine}, {root: np.empty(0, np.uint8)}, "gather")
            return
        out[root] = mine
        self.exchange({p: _ARRIVED for p in others}, {p: out[p] for p in others}, "gather")

    def _wait(self, requests, peers, nrecvs, what):
        if not requests:
            return
        start = time.monotonic()
        deadline, spin_until = start + self.timeout_s, start + _SPIN_S
        next_notice = 0.0
        while not MPI.Request.Testall(requests):
            now = time.monotonic()
            if now > spin_until:
                time.sleep(1e-5)  # ranks may outnumber cores (oversubscribed tests, ranks sharing a host)
            early = None
            if self.failures is not None and now >= next_notice:
                early = self.failures.failed(self.call)
                next_notice = now + _NOTICE_EVERY_S
            if early is None and now < deadline:
                continue
            pending = [i for i, r in enumerate(requests) if not r.Test()]
            for i in pending:
                if i < nrecvs:
                    requests[i].Cancel()
                    requests[i].Wait()
                else:
                    _ABANDONED.append(requests[i])
            absent = sorted({self.members[peers[i]] for i in pending})
            raise Missing(absent, f"the {what} {self.where}", early=early is not None)
