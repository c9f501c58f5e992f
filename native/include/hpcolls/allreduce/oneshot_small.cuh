// One-shot LL AllReduce for a small message on 2, 4 or 8 ranks: a thread per 16-byte chunk (one
// block up to 4 KiB, a block per 4 KiB above), the rank count fixed at compile time. Thread i
// owns chunk i whole: it pushes the chunk, read straight from the user's send buffer, into slot
// `rank` of every rank's scratch (its own included), polls chunk i of every slot of its own
// scratch (all lines in flight together), reduces the N chunks in rank order and stores the
// result. Same protocol and result as the general one-shot kernel (allreduce_oneshot.cu), with
// no lanes, shuffles or warp votes: no thread depends on another, so the call is the few
// dependent instructions of one thread, which is what a small call costs (docs/PERFORMANCE.md,
// "two-rank floor"). What keeps them few:
//   - the counters are read first and the chunk's loads are predicated, not branched around
//     (payload.cuh, predicated::), so both round trips overlap and nothing waits between them;
//   - a slot holds the first line of every chunk, then the second (line i and chunks + i): a
//     warp's store or load of one line per chunk covers whole 128-byte cache lines;
//   - our own chunk goes into our own slot as well, so every slot is polled and reduced alike,
//     with no test of which is ours (a load after our own store sees it);
//   - the epoch is advanced as soon as every thread has read it, not after the result store
//     (with several blocks, by the last block through an atomic count whose round trip overlaps
//     the wait for the peers' data).
//
// In place: thread i loads chunk i before anything else and stores it last.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/reduce_ops.cuh"

namespace hpcolls::kernels {


template <typename T, Op OP, int kRanks>
__global__ void allreduce_oneshot_small(DevComm c, const char* send, char* recv, uint32_t bytes, bool vec_ok) {
  constexpr size_t kUnit = Unit<T>::value;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  // The counters first: the push waits for the epoch, and the payload load overlaps its trip.
  CallState<kSmallMode> call(c, Algo::OneShot);
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;  // a thread per chunk at least (oneshot_small_fits)
  const uint32_t slot_lines = chunks * uint32_t(kLinesPerChunk);
  const uint32_t gap = chunks;  // chunk i's lines: i and gap + i of a slot
  // Our slot in peer (rank + k) mod N's scratch, k = 1 .. N - 1 (so that ranks do not all store
  // to rank 0 first), in the first half's terms: the scratch pointers are indexed kernel
  // parameters, a constant-cache load each.
  LLLine* to[kRanks - 1];
#pragma unroll
  for (int k = 1; k < kRanks; ++k) {
    const int peer = c.rank + k < kRanks ? c.rank + k : c.rank + k - kRanks;
    to[k - 1] = static_cast<LLLine*>(c.scratch[peer]) + c.rank * slot_lines + i;
  }
  const LLLine* const slots = static_cast<const LLLine*>(c.scratch[c.rank]);
  const uint4 mine = predicated::load_chunk<kUnit>(send, i, bytes, vec_ok);  // 0 beyond the last chunk
  // Moved to this call's half here, outside the branch below, so that the half's size (a kernel
  // parameter too) is loaded while the epoch is on its way rather than after it. (This order of
  // the address arithmetic measured 0.01-0.02 µs faster than one loop over all N slots, docs/PERFORMANCE.md.)
#pragma unroll
  for (int k = 0; k < kRanks - 1; ++k) to[k] = call.in_half(to[k]);
  const LLLine* const received = call.in_half(slots);
  LLLine* const own = call.in_half(static_cast<LLLine*>(c.scratch[c.rank]) + c.rank * slot_lines + i);
  const bool taking_part = i < chunks && !call.broken();
  if (taking_part) {
#pragma unroll
    for (int k = 0; k < kRanks - 1; ++k) call.send_chunk(to[k], to[k] + gap, mine);
    call.send_chunk(own, own + gap, mine);
  }
  // Every thread has read the epoch: advance it now, while the data is on its way, instead of
  // after the result store at the end of the call.
  call.finish();
  if (taking_part) {
    LLPacket<kSmallMode> w[2 * kRanks];
    if (call.template receive_every_rank<kRanks>(received, slot_lines, i, gap, w)) {
      using R = Reduce<T, OP>;
      using Packet = LLPacket<kSmallMode>;
      uint4 acc = Packet::chunk_of(w[0], w[1]);  // strictly in rank order
#pragma unroll
      for (int q = 1; q < kRanks; ++q) acc = reduce_chunk<T, R>(acc, Packet::chunk_of(w[2 * q], w[2 * q + 1]));
      predicated::store_chunk<kUnit>(recv, i, bytes, vec_ok, acc);
    }
  }
}

}  // namespace hpcolls::kernels
