// The steps of a one-shot LL AllReduce over any set of threads, each taking whole chunks: `first`
// is the calling thread's index among them and `step` their count. The device API's block-scope
// allreduce runs them over the calling block (hpcolls/device/collectives.cuh). The host-launched
// one-shot kernels give a chunk a lane per rank instead (allreduce/oneshot.cuh) or fix the rank
// count at compile time (allreduce/oneshot_small.cuh), which a block of any shape and size cannot;
// the protocol is the same: every rank pushes its input into slot `rank` of every peer's scratch,
// then reduces the N slots in rank order 0..N-1 (rank_order.cuh), so every rank's result is
// bitwise the same, and the same as the host path's.
//
// A thread first pushes all its chunks, then reduces them one by one, so that its waits for the
// peers overlap their pushes. In place: a thread loads chunk i again just before storing its
// result there, and no other thread touches chunk i.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/rank_order.cuh"
#include "hpcolls/reduce_ops.cuh"

namespace hpcolls {

// Two ranks or more, inside `call`; T: the type the elements reduce as (reduce_ops.cuh); vec_ok:
// send and recv 16-byte aligned. False on a time-out (this thread's, or another's it saw).
template <typename T, Op OP, int kMode>
__device__ inline bool allreduce_oneshot_steps(CallState<kMode>& call, const device::Comm& c, const char* send,
                                               char* recv, uint32_t bytes, bool vec_ok, uint32_t first,
                                               uint32_t step) {
  constexpr size_t kUnit = Unit<T>::value;
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const uint32_t slot_lines = chunks * uint32_t(kLinesPerChunk);
  bool ok = !call.broken();
  for (uint32_t i = first; ok && i < chunks; i += step)
    call.push_to_peers(uint32_t(c.rank) * slot_lines + i * uint32_t(kLinesPerChunk),
                       load_chunk<kUnit>(send, i, bytes, vec_ok));
  const LLLine* const slots = call.half(c.rank);
  for (uint32_t i = first; ok && i < chunks; i += step) {
    uint4 acc;
    ok = reduce_in_rank_order<T, OP>(call, c, slots, slot_lines, i * uint32_t(kLinesPerChunk),
                                     load_chunk<kUnit>(send, i, bytes, vec_ok), acc);
    if (ok) store_chunk<kUnit>(recv, i, bytes, vec_ok, acc);
  }
  return ok;
}

}  // namespace hpcolls
