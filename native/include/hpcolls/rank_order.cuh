// The reduction of one 16-byte chunk from each of the N slots, combined strictly in rank order
// 0..N-1 (our own contribution taken from registers, every peer's received through its LL lines),
// so every rank computes bitwise-identical results: two-shot's of its own part. (One-shot calls
// combine in the same order: the general kernel over N lanes through warp shuffles, the
// small-message kernel in one thread, allreduce_oneshot_small.cu.)
#pragma once
#include <cstdint>

#include "hpcolls/call_state.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/reduce_ops.cuh"

namespace hpcolls {

// Peers whose lines one thread polls together: their round trips overlap, so waiting for
// data that has already arrived costs one round trip per group instead of two per peer.
constexpr int kPeersPolledTogether = 4;

// slots: our scratch region holding slot q at slots + q * slot_lines; line: the chunk's first
// line inside a slot. False on time-out (nothing is stored then).
template <typename T, Op OP, int kMode>
__device__ inline bool reduce_in_rank_order(CallState<kMode>& call, const device::Comm& c, const LLLine* slots,
                                            uint32_t slot_lines, uint32_t line, uint4 mine, uint4& acc) {
  constexpr int kG = kPeersPolledTogether;
  acc = mine;
#pragma unroll 1  // the rank count is a run-time value
  for (int q0 = 0; q0 < c.nranks; q0 += kG) {
    // Lines 2g and 2g+1 of the group belong to rank q0 + g: poll those of every peer in range.
    uint32_t pending = 0;
#pragma unroll
    for (int g = 0; g < kG; ++g)
      if (q0 + g < c.nranks && q0 + g != c.rank) pending |= 0b11u << (2 * g);
    LLPacket<kMode> w[2 * kG];  // only the lines polled are read below
    if (pending != 0 &&
        !call.receive_lines(slots + q0 * slot_lines + line, slot_lines, pending, w, [q0](int j) { return q0 + j / 2; }))
      return false;
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      const int q = q0 + g;
      if (q >= c.nranks) break;
      const uint4 v = q == c.rank ? mine : LLPacket<kMode>::chunk_of(w[2 * g], w[2 * g + 1]);
      acc = q == 0 ? v : reduce_chunk<T, Reduce<T, OP>>(acc, v);
    }
  }
  return true;
}

}  // namespace hpcolls
