// Two-shot LL AllReduce: reduce-scatter, then all-gather, both barrier-free.
//
// The message's 16-byte chunks are split into N contiguous parts; rank j owns part j. Phase 1
// pushes every chunk of part j (j != rank) into slot `rank` of rank j's reduce-scatter region.
// Phase 2 reduces our own part over the N slots in rank order, writes it to the receive buffer
// and pushes it into slot `rank` of every peer's all-gather region. Phase 3 copies the other
// parts out of our all-gather region. Each part is reduced once, by its owner, in rank order,
// so every rank receives bitwise-identical results.
//
// In place: our own part is read and written only in phase 2, by the same thread. Chunk i of a
// peer's part is read in phase 1 and written in phase 3 only after its owner's reduced value
// arrived, which the owner could send only after receiving our phase-1 push of chunk i.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/rank_order.cuh"

namespace hpcolls::kernels {

template <typename T, Op OP, int kMode>
__global__ void allreduce_twoshot(DevComm c, const char* send, char* recv, uint32_t bytes, bool vec_ok) {
  constexpr size_t kUnit = Unit<T>::value;
  constexpr uint32_t kLines = kLinesPerChunk;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  CallState<kMode> call(c, Algo::TwoShot);
  const uint32_t nranks = c.nranks, rank = c.rank;
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const uint32_t part = (chunks + nranks - 1) / nranks;
  const uint32_t slot_lines = part * kLines;
  const uint32_t gather_base = nranks * slot_lines;  // all-gather region after reduce-scatter's
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t stride = gridDim.x * blockDim.x;
  const uint32_t own_begin = rank * part;
  const uint32_t own_end = min(chunks, own_begin + part);
  const LLLine* own = call.half(c.rank);
  bool ok = !call.broken();

  // Phase 1: reduce-scatter sends.
  for (uint32_t i = first; ok && i < chunks; i += stride) {
    const uint32_t owner = i / part;
    if (owner == rank) continue;
    const uint4 v = load_chunk<kUnit>(send, i, bytes, vec_ok);
    call.send_chunk(call.half(int(owner)) + rank * slot_lines + (i - owner * part) * kLines, v);
  }
  // Phase 2: reduce our own part in rank order, keep it, and send it to every peer.
  for (uint32_t i = own_begin + first; ok && i < own_end; i += stride) {
    const uint32_t line = (i - own_begin) * kLines;
    uint4 acc;
    ok = reduce_in_rank_order<T, OP>(call, c, own, slot_lines, line, load_chunk<kUnit>(send, i, bytes, vec_ok), acc);
    if (!ok) break;
    store_chunk<kUnit>(recv, i, bytes, vec_ok, acc);
    call.push_to_peers(gather_base + rank * slot_lines + line, acc);
  }
  // Phase 3: all-gather receives.
  for (uint32_t i = first; ok && i < chunks; i += stride) {
    const uint32_t owner = i / part;
    if (owner == rank) continue;
    uint4 v;
    ok = call.receive_chunk(own + gather_base + owner * slot_lines + (i - owner * part) * kLines, int(owner), v);
    if (ok) store_chunk<kUnit>(recv, i, bytes, vec_ok, v);
  }
  call.finish();
}

// The launcher for LL mode kMode: mode 0 in the default build (native/hpcolls), 1..3 in the
// diagnostic module (native/diagnostics).
template <int kMode>
cudaError_t launch_twoshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return launch_allreduce_kernel<kMode>(c, t, op, a, [](auto type_tag, auto op_tag) {
    return &allreduce_twoshot<decltype(type_tag), decltype(op_tag)::value, kMode>;
  });
}

}  // namespace hpcolls::kernels
