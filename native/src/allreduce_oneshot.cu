// One-shot LL AllReduce: every rank pushes its whole input, read straight from the user's send
// buffer, into slot `rank` of every peer's scratch, then reduces the N slots in rank order into
// the user's receive buffer. One remote-store latency; no barrier before or after.
//
// The same thread handles chunk i in both phases, so an in-place call reads chunk i (to push it)
// before it overwrites it. (Loading a thread's first chunk ahead of the epoch read, so that the two
// loads overlap, was measured and bought nothing: native/bench/oneshot_anatomy.cu, PERFORMANCE.md.)
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/rank_order.cuh"

namespace hpcolls {
namespace {

template <typename T, Op OP>
__global__ void allreduce_oneshot(DevComm c, const char* send, char* recv, size_t bytes, bool vec_ok) {
  constexpr size_t kUnit = Unit<T>::value;
  const size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  const size_t first = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const size_t slot_lines = chunks * kLinesPerChunk;
  CallState call(c, Algo::OneShot);
  const auto mine = [&](size_t i) { return load_chunk<kUnit>(send, i, bytes, vec_ok); };

  if (!call.broken()) {
    for (size_t i = first; i < chunks; i += stride) call.push_to_peers(c.rank * slot_lines + i * kLinesPerChunk, mine(i));
    const uint4* own = call.half(c.rank);
    for (size_t i = first; i < chunks; i += stride) {
      uint4 acc;
      if (!reduce_in_rank_order<T, OP>(call, c, own, slot_lines, i * kLinesPerChunk, mine(i), acc))
        break;
      store_chunk<kUnit>(recv, i, bytes, vec_ok, acc);
    }
  }
  call.finish();
}

}  // namespace

cudaError_t launch_allreduce_oneshot(const DevComm& c, DType t, Op op, const AllreduceArgs& a) {
  return launch_allreduce_kernel(c, t, op, a, [](auto type_tag, auto op_tag) {
    return &allreduce_oneshot<decltype(type_tag), decltype(op_tag)::value>;
  });
}

}  // namespace hpcolls
