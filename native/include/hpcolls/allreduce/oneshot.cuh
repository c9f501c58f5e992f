// One-shot LL AllReduce: every rank pushes its whole input, read straight from the user's send
// buffer, into slot `rank` of every peer's scratch, then reduces the N slots in rank order into
// the user's receive buffer. One remote-store latency; no barrier before or after.
//
// Work is split a lane per (chunk, rank): lane q of chunk i's group pushes chunk i to rank q and
// waits for rank q's chunk i, so a thread makes one store and one poll instead of looping over the
// peers; the group then combines its N values through warp shuffles, strictly in rank order. A
// small call is straight-line code: its cost is the dependent instructions on that path
// (docs/PERFORMANCE.md, anatomy), not the data. At 2, 4 or 8 ranks, calls that fit a block per
// 4 KiB within the rank's share of the SMs take the small-message kernel instead
// (allreduce_oneshot_small.cu), which has fewer of them.
//
// In place: every lane of a group loads chunk i before the shuffles, and the one store of the
// result comes after them, so chunk i is read before it is overwritten.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/reduce_ops.cuh"

namespace hpcolls::kernels {

// Lane `src` of this thread's group of `lanes` (a power of two dividing 32).
__device__ inline uint4 shfl_chunk(uint4 v, int src, int lanes) {
  return make_uint4(__shfl_sync(~0u, v.x, src, lanes), __shfl_sync(~0u, v.y, src, lanes),
                    __shfl_sync(~0u, v.z, src, lanes), __shfl_sync(~0u, v.w, src, lanes));
}

// Lane 0 of a group combines the group's chunks (lane r holds rank r's), strictly in rank order.
// It holds rank 0's chunk itself, so it starts from its own. kLanes: the group size when it is
// known at compile time (2 or 4 ranks), so that all its shuffles are in flight together instead of
// one trip of a run-time loop each; 0: any group size. Other lanes' results are not used.
template <typename T, Op OP, int kLanes>
__device__ inline uint4 combine_group(uint4 v, int nranks, int lanes) {
  uint4 acc = v;
  if constexpr (kLanes > 0) {
    uint4 from[kLanes];
#pragma unroll
    for (int r = 1; r < kLanes; ++r) from[r] = shfl_chunk(v, r, kLanes);
#pragma unroll
    for (int r = 1; r < kLanes; ++r)
      if (r < nranks) acc = reduce_chunk<T, Reduce<T, OP>>(acc, from[r]);
  } else {
#pragma unroll 1  // the rank count is a run-time value
    for (int r = 1; r < nranks; ++r) acc = reduce_chunk<T, Reduce<T, OP>>(acc, shfl_chunk(v, r, lanes));
  }
  return acc;
}

template <typename T, Op OP, int kMode>
__global__ void allreduce_oneshot(DevComm c, const char* send, char* recv, uint32_t bytes, bool vec_ok) {
  constexpr size_t kUnit = Unit<T>::value;
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t stride = gridDim.x * blockDim.x;  // a multiple of 32: loops below are warp-uniform
  const auto mine = [&](uint32_t i) { return i < chunks ? load_chunk<kUnit>(send, i, bytes, vec_ok) : uint4{}; };
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);

  if (c.nranks == 1) {
    // Alone, the sum is the input: a copy. No scratch, and no epoch: no peer waits on this rank.
    for (uint32_t i = first; i < chunks; i += stride) store_chunk<kUnit>(recv, i, bytes, vec_ok, mine(i));
    return;
  }

  const int lanes = 1 << c.lane_shift;
  const int q = int(threadIdx.x) & (lanes - 1);  // the rank this lane exchanges with
  const uint32_t slot_lines = chunks * uint32_t(kLinesPerChunk);
  const uint32_t items = ((chunks << c.lane_shift) + 31u) & ~31u;  // whole warps
  // Our slot in rank q's scratch and rank q's slot in ours, in the first half's terms: computed
  // before the epoch read, so only the half's offset waits for it (CallState::in_half). q < 32 =
  // kMaxRanks, so scratch[q] exists even for the lanes beyond the rank count, which do not use it.
  LLLine* const to_q = static_cast<LLLine*>(c.scratch[q]) + c.rank * slot_lines;
  const LLLine* const from_q = static_cast<const LLLine*>(c.scratch[c.rank]) + q * slot_lines;
  // A thread's first chunk is loaded before the epoch, so the two loads overlap.
  const uint4 first_mine = mine(first >> c.lane_shift);
  CallState<kMode> call(c, Algo::OneShot);
  LLLine* const send_to = call.in_half(to_q);
  const LLLine* const receive_from = call.in_half(from_q);

  // Item g: lane q of chunk i = g / lanes, holding our chunk i in v. False on a time-out in the warp.
  const auto exchange_and_reduce = [&](uint32_t g, uint4 v) {
    const uint32_t i = g >> c.lane_shift;
    bool ok = true;
    if (i < chunks && q < c.nranks && q != c.rank) {  // v: ours, then rank q's
      const uint32_t line = i * uint32_t(kLinesPerChunk);
      call.send_chunk(send_to + line, v);
      ok = call.receive_chunk(receive_from + line, q, v);
    }
    // A time-out anywhere in the warp: store nothing, as some peer's data is missing.
    if (!__all_sync(~0u, ok)) return false;
    const uint4 acc = c.lane_shift == 1   ? combine_group<T, OP, 2>(v, c.nranks, lanes)
                      : c.lane_shift == 2 ? combine_group<T, OP, 4>(v, c.nranks, lanes)
                                          : combine_group<T, OP, 0>(v, c.nranks, lanes);
    if (q == 0 && i < chunks) store_chunk<kUnit>(recv, i, bytes, vec_ok, acc);
    return true;
  };
  // A call of one item per thread (every message up to 4 KiB at up to 4 ranks) runs no loop.
  const bool one_item = first + stride >= items;
  if (__all_sync(~0u, !call.broken()) && first < items && exchange_and_reduce(first, first_mine) && !one_item)
    for (uint32_t g = first + stride; g < items; g += stride)
      if (!exchange_and_reduce(g, mine(g >> c.lane_shift))) break;
  call.finish();
}

// The launcher for LL mode kMode: mode 0 in the default build (native/hpcolls), 1..3 in the
// diagnostic module (native/diagnostics).
template <int kMode>
cudaError_t launch_oneshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return launch_allreduce_kernel<kMode>(c, t, op, a, [](auto type_tag, auto op_tag) {
    return &allreduce_oneshot<decltype(type_tag), decltype(op_tag)::value, kMode>;
  });
}

}  // namespace hpcolls::kernels
