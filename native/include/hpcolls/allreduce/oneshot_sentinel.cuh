// One-shot AllReduce on the sentinel protocol (sentinel.cuh): every rank stores its whole input,
// read straight from the user's send buffer, as chunk rank * chunks + i of every peer's sentinel
// area, then reduces the N slots of its own area strictly in rank order 0..N-1 (its own chunk
// from the send buffer) into the receive buffer, re-arming each slot chunk it consumed. The
// result is the LL one-shot's bit for bit: the same rank order, the same operators.
//
// Every store carries payload only, so a message moves half the bytes LL lines move. All the
// pushes go out first; then each thread takes kChunksPerThread chunks at a time and, for each
// rank in order, polls those chunks of that rank's slot together (their round trips overlap).
//
// The frame around the algorithm (the dependent-launch wait, a lone rank's copy, the call's state
// and the epoch's advance) is the two-shot kernel's too: sentinel::run_allreduce
// (sentinel_kernel.cuh).
//
// In place: thread t reads chunk i (i = t mod the grid's threads) in the pushes and again before
// reducing it, and is the only one to store chunk i of the result, after both reads.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/reduce_ops.cuh"
#include "hpcolls/sentinel.cuh"
#include "hpcolls/sentinel_kernel.cuh"

namespace hpcolls::kernels {

template <typename T, Op OP>
__global__ void allreduce_oneshot_sentinel(DevComm c, const char* send, char* recv, uint32_t bytes, bool vec_ok) {
  sentinel::run_allreduce<T>(c, send, recv, bytes, vec_ok, Algo::OneShot, [&](CallState<0>& call, const auto& m) {
    bool ok = !call.broken();
    const uint32_t my_slot = uint32_t(c.rank) * m.chunks;
    for (uint32_t i = m.first; ok && i < m.chunks; i += m.stride)
      sentinel::push_to_peers(call, c, my_slot + i, m.load(i));
    const sentinel::Area own = sentinel::area(call, c, c.rank);
    constexpr int kU = sentinel::kChunksPerThread;
    for (uint32_t base = m.first; ok && base < m.chunks; base += kU * m.stride) {
      uint32_t valid = 0, offset[kU];
      uint4 mine[kU], acc[kU] = {};
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        offset[u] = base + u * m.stride;
        if (offset[u] < m.chunks) valid |= 1u << u;
        mine[u] = offset[u] < m.chunks ? m.load(offset[u]) : uint4{};
      }
      const auto slot = [chunks = m.chunks](int q) { return uint32_t(q) * chunks; };
      ok = sentinel::reduce_in_rank_order<T, OP>(call, c, own, slot, offset, valid, mine, acc);
      if (!ok) break;
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (valid >> u & 1) m.store(base + u * m.stride, acc[u]);
    }
  });
}

}  // namespace hpcolls::kernels
