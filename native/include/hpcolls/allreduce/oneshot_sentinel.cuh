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
// In place: thread t reads chunk i (i = t mod the grid's threads) in the pushes and again before
// reducing it, and is the only one to store chunk i of the result, after both reads.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/reduce_ops.cuh"
#include "hpcolls/sentinel.cuh"

namespace hpcolls::kernels {

template <typename T, Op OP>
__global__ void allreduce_oneshot_sentinel(DevComm c, const char* send, char* recv, uint32_t bytes, bool vec_ok) {
  constexpr size_t kUnit = Unit<T>::value;
  constexpr int kU = sentinel::kChunksPerThread;
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t stride = gridDim.x * blockDim.x;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch();
  if (c.nranks == 1) {  // alone, the sum is the input: a copy, no scratch and no epoch
    for (uint32_t i = first; i < chunks; i += stride)
      store_chunk<kUnit>(recv, i, bytes, vec_ok, load_chunk<kUnit>(send, i, bytes, vec_ok));
    return;
  }

  CallState<0> call(c, Algo::OneShot);
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
  call.finish();
}

inline cudaError_t launch_oneshot_sentinel(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return launch_allreduce_kernel<0>(c, t, op, a, [](auto type_tag, auto op_tag) {
    return &allreduce_oneshot_sentinel<decltype(type_tag), decltype(op_tag)::value>;
  });
}

}  // namespace hpcolls::kernels
