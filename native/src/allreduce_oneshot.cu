// One-shot LL AllReduce: every rank pushes its whole input, read straight from the user's send
// buffer, into slot `rank` of every peer's scratch, then reduces the N slots in rank order into
// the user's receive buffer. One remote-store latency; no barrier before or after.
//
// The same thread handles chunk i in both phases, so an in-place call reads chunk i (to push it)
// before it overwrites it.
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/rank_order.cuh"

namespace hpcolls {
namespace {

template <typename T, Op OP, int kMode>
__global__ void allreduce_oneshot(DevComm c, const char* send, char* recv, uint32_t bytes, bool vec_ok) {
  constexpr size_t kUnit = Unit<T>::value;
  constexpr uint32_t kLines = kLinesPerChunk;
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t stride = gridDim.x * blockDim.x;
  const uint32_t slot_lines = chunks * kLines;
  const auto mine = [&](uint32_t i) { return load_chunk<kUnit>(send, i, bytes, vec_ok); };
  // A thread's first chunk is loaded before the epoch, so the two loads overlap, and stays in
  // registers from push to reduce; a call of one chunk per thread (up to 4 KiB) runs no loop.
  const uint4 first_mine = first < chunks ? mine(first) : uint4{};
  CallState<kMode> call(c, Algo::OneShot);

  if (!call.broken() && first < chunks) {
    call.push_to_peers(c.rank * slot_lines + first * kLines, first_mine);
    for (uint32_t i = first + stride; i < chunks; i += stride) call.push_to_peers(c.rank * slot_lines + i * kLines, mine(i));
    const uint4* own = call.half(c.rank);
    const auto reduce_and_store = [&](uint32_t i, uint4 v) {
      uint4 acc;
      if (!reduce_in_rank_order<T, OP>(call, c, own, slot_lines, i * kLines, v, acc)) return false;
      store_chunk<kUnit>(recv, i, bytes, vec_ok, acc);
      return true;
    };
    if (reduce_and_store(first, first_mine))
      for (uint32_t i = first + stride; i < chunks; i += stride)
        if (!reduce_and_store(i, mine(i))) break;
  }
  call.finish();
}

}  // namespace

cudaError_t launch_allreduce_oneshot(const DevComm& c, DType t, Op op, const AllreduceArgs& a) {
  return launch_allreduce_kernel(c, t, op, a, [](auto type_tag, auto op_tag, auto mode_tag) {
    return &allreduce_oneshot<decltype(type_tag), decltype(op_tag)::value, decltype(mode_tag)::value>;
  });
}

}  // namespace hpcolls
