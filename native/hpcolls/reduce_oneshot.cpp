// One-shot LL Reduce: a Reduce_scatter whose only non-empty block is the root's, so it runs that
// kernel (hpcolls/reduce_scatter/oneshot.cuh, or oneshot_small.cuh for a small message) with every
// block starting at the send buffer's start and all but the root's empty: every non-root pushes
// its input, read straight from the user's send buffer, into slot `rank` of the root's data
// region; the root reduces the N slots strictly in rank order into its receive buffer. One
// remote-store latency, no barrier; the result is the one AllReduce gives for the same inputs. A
// kernel of its own would be the same protocol line for line, and 68 more (type, op)
// instantiations to build.
//
// The handshakes fall out of the empty blocks (handshake.cuh has the argument): the root stores
// one into every non-root's half and every non-root into every other non-root's, on entry; a
// non-root awaits one from each peer at the end of the call.
//
// In place (MPI_IN_PLACE at the root: its input is the receive buffer): chunk i is loaded and
// stored by one thread, the load first, and no other block is read. A non-root's receive buffer
// is not touched (its block is empty).
#include "hpcolls/collective_args.h"

namespace hpcolls {

namespace {

// A's Reduce_scatter: the root's block is the whole message, every other block empty (layout:
// the caller's, alive for the launch).
CollectiveArgs as_reduce_scatter(const CollectiveArgs& a, BlockLayout& layout) {
  layout = BlockLayout{};  // every offset 0
  layout.bytes[a.root] = uint32_t(a.bytes);
  CollectiveArgs rs = a;
  rs.layout = &layout;
  rs.collective = Collective::Reduce;
  return rs;
}

}  // namespace

cudaError_t launch_reduce_oneshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  BlockLayout layout;
  return launch_reduce_scatter_oneshot(c, t, op, as_reduce_scatter(a, layout));
}

cudaError_t launch_reduce_oneshot_small(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  BlockLayout layout;
  return launch_reduce_scatter_oneshot_small(c, t, op, as_reduce_scatter(a, layout));
}

}  // namespace hpcolls
