// The reduction both AllReduce algorithms end in: one 16-byte chunk from each of the N slots,
// combined strictly in rank order 0..N-1 (our own contribution taken from registers, every peer's
// received through its LL lines), so every rank computes bitwise-identical results.
#pragma once
#include <cstddef>

#include "hpcolls/call_state.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/reduce_ops.cuh"

namespace hpcolls {

// slots: our scratch region holding slot q at slots + q * slot_lines; line: the chunk's first
// line inside a slot. False on time-out (nothing is stored then).
template <typename T, Op OP>
__device__ inline bool reduce_in_rank_order(CallState& call, const DevComm& c, const uint4* slots, size_t slot_lines,
                                            size_t line, uint4 mine, uint4& acc) {
  acc = mine;
#pragma unroll 1  // as push_to_peers: the rank count is a run-time value
  for (int q = 0; q < c.nranks; ++q) {
    uint4 v = mine;
    if (q != c.rank && !call.receive_chunk(slots + q * slot_lines + line, q, v)) return false;
    acc = q == 0 ? v : reduce_chunk<T, Reduce<T, OP>>(acc, v);
  }
  return true;
}

}  // namespace hpcolls
