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
  // The algorithm, inside sentinel::run_allreduce's frame. The kernel's scalars are captured by
  // value and the grid's fields copied into locals: so written, the compiler emits the instructions
  // the kernel had before it shared the frame (all captures by reference, or grid.first & co. in
  // the loops, made it order them otherwise; PTX compared).
  const auto one_shot = [&c, send, recv, bytes, vec_ok](CallState<0>& call, const sentinel::ChunkGrid& grid) {
    constexpr size_t kUnit = Unit<T>::value;
    constexpr int kU = sentinel::kChunksPerThread;
    const uint32_t chunks = grid.chunks, first = grid.first, stride = grid.stride;
    bool ok = !call.broken();
    const uint32_t my_slot = uint32_t(c.rank) * chunks;
    for (uint32_t i = first; ok && i < chunks; i += stride) {
      sentinel::push_to_peers(call, c, my_slot + i, load_chunk<kUnit>(send, i, bytes, vec_ok));
    }
    const sentinel::Area own = sentinel::area(call, c, c.rank);
    for (uint32_t base = first; ok && base < chunks; base += kU * stride) {
      uint32_t valid = 0, offset[kU];
      uint4 mine[kU], acc[kU] = {};
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        offset[u] = base + u * stride;
        if (offset[u] < chunks) valid |= 1u << u;
        mine[u] = offset[u] < chunks ? load_chunk<kUnit>(send, offset[u], bytes, vec_ok) : uint4{};
      }
      ok = sentinel::reduce_in_rank_order<T, OP>(call, c, own, [chunks](int q) { return uint32_t(q) * chunks; }, offset,
                                                 valid, mine, acc);
      if (!ok) break;
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (valid >> u & 1) store_chunk<kUnit>(recv, base + u * stride, bytes, vec_ok, acc[u]);
    }
  };
  sentinel::run_allreduce<T>(c, send, recv, bytes, vec_ok, Algo::OneShot, one_shot);
}

}  // namespace hpcolls::kernels
