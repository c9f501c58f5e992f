// One-shot LL AllReduce for a small message on 2, 4 or 8 ranks: one block, a thread per 16-byte
// chunk, the rank count fixed at compile time. Thread i owns chunk i whole: it pushes the chunk,
// read straight from the user's send buffer, into slot `rank` of every peer's scratch, polls every
// peer's chunk i in its own scratch (all peers' lines in flight together), reduces the N chunks in
// rank order and stores the result. Same protocol, scratch layout and result as the
// general one-shot kernel (allreduce_oneshot.cu), with no lanes, shuffles or warp votes: no
// thread depends on another, so the call is the few dependent instructions of one thread, which
// is what a small call costs (docs/PERFORMANCE.md, "two-rank floor").
//
// In place: thread i loads chunk i before anything else and stores it last.
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/rank_order.cuh"

namespace hpcolls {
namespace {

constexpr int kMode = 0;  // the LL mode of every communicator not forced to another (ll_line.cuh)

template <typename T, Op OP, int kRanks>
__global__ void allreduce_oneshot_small(DevComm c, const char* send, char* recv, uint32_t bytes, bool vec_ok) {
  constexpr size_t kUnit = Unit<T>::value;
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const uint32_t i = threadIdx.x;  // one block, at least one thread per chunk (oneshot_small_fits)
  const uint32_t slot_lines = chunks * uint32_t(kLinesPerChunk);
  const uint32_t line = i * uint32_t(kLinesPerChunk);
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch();
  // Every scratch address in the first half's terms, before the epoch read (CallState::in_half):
  // peer k = rank + k (mod N), so that ranks do not all store to rank 0 first.
  uint4* to[kRanks - 1];
#pragma unroll
  for (int k = 1; k < kRanks; ++k) {
    const int peer = c.rank + k < kRanks ? c.rank + k : c.rank + k - kRanks;
    to[k - 1] = static_cast<uint4*>(c.scratch[peer]) + c.rank * slot_lines + line;
  }
  const uint4* const slots = static_cast<const uint4*>(c.scratch[c.rank]);
  const uint4 mine = i < chunks ? load_chunk<kUnit>(send, i, bytes, vec_ok) : uint4{};
  CallState<kMode> call(c, Algo::OneShot);
  if (i < chunks && !call.broken()) {
#pragma unroll
    for (int k = 0; k < kRanks - 1; ++k) call.send_chunk(call.in_half(to[k]), mine);
    uint4 acc;
    if (reduce_in_rank_order<T, OP, kMode, kRanks>(call, c, call.in_half(slots), slot_lines, line, mine, acc))
      store_chunk<kUnit>(recv, i, bytes, vec_ok, acc);
  }
  call.finish();
}

}  // namespace

cudaError_t launch_allreduce_oneshot_small(const DevComm& c, DType t, Op op, const AllreduceArgs& a) {
  return launch_allreduce_kernel(c, t, op, a, [&c](auto type_tag, auto op_tag, auto) {
    using T = decltype(type_tag);
    constexpr Op kOp = decltype(op_tag)::value;
    static_assert(sizeof(kSmallOneShotRanks) == 3 * sizeof(int) && kSmallOneShotRanks[0] == 2 &&
                      kSmallOneShotRanks[1] == 4 && kSmallOneShotRanks[2] == 8,
                  "the cases below are kSmallOneShotRanks");
    switch (c.nranks) {  // oneshot_small_fits admits these counts only
      case 2: return &allreduce_oneshot_small<T, kOp, 2>;
      case 4: return &allreduce_oneshot_small<T, kOp, 4>;
      default: return &allreduce_oneshot_small<T, kOp, 8>;
    }
  });
}

}  // namespace hpcolls
