"""Which hierarchical scheme carries an Allreduce: a stated latency model, and a table of measured
crossovers that overrides it where one exists (docs/PERFORMANCE.md, "Across nodes").

The two schemes (hpcolls/hierarchy/path.py), for M nodes of k ranks and a message of n bytes:

- leaders: node reduce to local rank 0 -> the M leaders exchange their node partials -> node bcast.
  Only the leaders copy and send, n bytes each.
- slices: node reduce-scatter -> the ranks of each local index exchange their n/k-byte slices across
  the nodes -> node allgather. Every rank copies and combines n/k bytes; the node sends k times as
  many messages (through its NICs) of a k-th of the size.

Both take two native node steps, two copies between GPU and host (with a stream synchronization
each) and one round of MPI messages between the nodes (the direct exchange: every rank sends its
part to its M-1 counterparts and combines what it gets in node order on the host):

    leaders(n) = F + 2·c(n)   + w(n)               + (M-1)·r(n)
    slices(n)  = F + 2·c(n/k) + w(n)/min(k, nics)  + (M-1)·r(n/k) + (k-1)·(M-1)·g
    F = 2·(launch + step) + latency + 2·(M-1)·post
    c(x) = copy + x/copy_bw,   w(n) = (M-1)·n/network_bw,   r(x) = combine + x/combine_bw

`g` is the gap the node's NIC needs per extra message in flight (k ranks send at once): slices pay
it for tiny messages and win once the per-byte terms (copies, the host combine, the wire where a
node has several NICs) outweigh it. Slices also need the element count to divide by k (equal
slices for the native allgather); other counts take leaders.

The parameters below are this project's measurements on one H200 where there is one (kernel step,
launch) and published figures otherwise (docs/PERFORMANCE.md cites them); `gap_us` is an
assumption. A measured crossover for a cluster belongs in `MEASURED_LEADERS_MAX_BYTES`.
"""
from dataclasses import dataclass
from functools import lru_cache

# (nodes, ranks per node) -> the largest Allreduce (bytes) for which `leaders` was measured faster
# than `slices` on a real cluster. None measured yet: the model decides everywhere.
MEASURED_LEADERS_MAX_BYTES = {}


@dataclass(frozen=True)
class LatencyModel:
    step_us: float = 1.3          # one native node step of a small message (one H200, 4 ranks: 1.3 µs)
    launch_us: float = 5.0        # host cost of one native launch from Python (bare launch here: 4.3-5.2 µs)
    copy_us: float = 7.0          # one small copy GPU<->host with its stream synchronization (published: 6-7 µs)
    copy_gbs: float = 20.0        # GPU<->host copy bandwidth (PCIe 4/5 x16, assumed)
    latency_us: float = 1.2       # one small MPI message between nodes (published osu_latency: 1.18-1.26 µs)
    post_us: float = 0.5          # host cost of posting one MPI message from Python (mpi4py Isend/Irecv, assumed)
    network_gbs: float = 25.0     # one NIC (InfiniBand HDR, 200 Gb/s)
    nics_per_node: int = 1
    gap_us: float = 0.3           # the NIC's gap per extra message in flight (assumed)
    combine_us: float = 1.5       # one host combine step of a small array (numpy, assumed)
    combine_gbs: float = 5.0      # host combine throughput (numpy, assumed)

    def _fixed(self, nodes):
        return 2 * (self.launch_us + self.step_us) + self.latency_us + 2 * (nodes - 1) * self.post_us

    def _copy(self, nbytes):
        return self.copy_us + nbytes / (self.copy_gbs * 1e3)

    def _combine(self, nbytes):
        return self.combine_us + nbytes / (self.combine_gbs * 1e3)

    def _wire(self, nbytes, nodes):
        return (nodes - 1) * nbytes / (self.network_gbs * 1e3)

    def leaders_us(self, nbytes, nodes, ranks_per_node):
        return self._fixed(nodes) + 2 * self._copy(nbytes) + self._wire(nbytes, nodes) + \
            (nodes - 1) * self._combine(nbytes)

    def slices_us(self, nbytes, nodes, ranks_per_node):
        k = ranks_per_node
        return self._fixed(nodes) + 2 * self._copy(nbytes / k) + \
            self._wire(nbytes, nodes) / min(k, self.nics_per_node) + (nodes - 1) * self._combine(nbytes / k) + \
            (k - 1) * (nodes - 1) * self.gap_us


MODEL = LatencyModel()


def leaders_max_bytes(nodes, ranks_per_node, model=MODEL, limit=1 << 30):
    """The largest power-of-two message that goes to leaders (measured where the table has it,
    else the model's), or `limit` when slices never win below it."""
    measured = MEASURED_LEADERS_MAX_BYTES.get((nodes, ranks_per_node))
    if measured is not None:
        return measured
    return _modelled_leaders_max_bytes(nodes, ranks_per_node, model, limit)


@lru_cache(maxsize=64)
def _modelled_leaders_max_bytes(nodes, k, model, limit):
    """The model's crossover, searched once per layout: the search costs about 20 µs of Python,
    as much as the hierarchical call itself would spend deciding at every call."""
    if k == 1:
        return limit
    n = 8
    while n < limit and model.leaders_us(2 * n, nodes, k) <= model.slices_us(2 * n, nodes, k):
        n *= 2
    return n


def choose(nbytes, count, nodes, ranks_per_node, model=MODEL):
    """'leaders' or 'slices' for an Allreduce of `count` elements (`nbytes` bytes)."""
    k = ranks_per_node
    if k == 1 or count % k:
        return "leaders"
    return "leaders" if nbytes <= leaders_max_bytes(nodes, k, model) else "slices"
