// One-shot LL Allgather for a small message on 2, 4 or 8 ranks, the rank count fixed at compile
// time. It is to the general kernel (allgather/oneshot.cuh) what allreduce/oneshot_small.cuh is to
// the general AllReduce: the same protocol and result, with what keeps a small call short.
//
// Thread i owns chunk i of every block: it loads chunk i of its own block once, pushes it into
// slot `rank` of every rank's scratch (its own too, so that every slot is polled alike), advances
// the epoch as soon as every thread has read it, then polls chunk i of every slot at once and
// stores each into its rank's block of the receive buffer. A slot is laid out as the small
// AllReduce's (chunk i's lines at i and chunks + i, so a warp's stores and loads cover whole cache
// lines). Every rank receives from every peer, as in the general kernel: no handshakes.
//
// In place (the send block is the receive buffer's own block): the thread's one load comes before
// any store, and what it stores into its own block is what it loaded.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"

namespace hpcolls::kernels {

// The exchange of the small Allgather, which the small Bcast runs too (bcast/oneshot_small.cuh),
// for thread i of a message of `bytes`: it takes its chunk i from load(), pushes it into slot
// `rank` of every rank's scratch (its own too, so that every slot is polled alike), advances the
// epoch, then polls chunk i of every slot at once and hands the lines to take(words), words[2q] and
// words[2q + 1] being rank q's chunk i. take is not called where the thread has nothing to store:
// no chunk i, a broken communicator, or a time-out. The chunk's load is a callable, not a value,
// so that it is issued where the kernels always issued it, between the chunk count and the
// pushes: the compiler then emits the instructions of the kernels as they were before they shared
// this function (a value loaded by the caller moved the count after the load).
template <int kRanks, typename Load, typename Take>
__device__ __forceinline__ void exchange_with_every_rank(CallState<kSmallMode>& call, const DevComm& c, uint32_t i,
                                                         uint32_t bytes, Load load, Take take) {
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const bool has = i < chunks;
  const uint4 mine = load();
  const uint32_t slot_lines = chunks * uint32_t(kLinesPerChunk);
  const bool ok = !call.broken();
  if (ok && has) {
#pragma unroll
    for (int k = 0; k < kRanks; ++k) {
      const int q = (c.rank + k) % kRanks;  // from this rank on, so that ranks do not all hit rank 0 first
      LLLine* const to = call.half(q) + uint32_t(c.rank) * slot_lines + i;
      call.send_chunk(to, to + chunks, mine);
    }
  }
  // Every thread has read the epoch: advance it now, while the data is on its way.
  call.finish();
  if (!ok || !has) return;
  LLPacket<kSmallMode> w[2 * kRanks];
  if (!call.template receive_every_rank<kRanks>(call.half(c.rank), slot_lines, i, chunks, w)) return;
  take(w);
}

// bytes: one rank's block; stride: bytes from one block of the receive buffer to the next.
// send_vec: send 16-byte aligned; recv_vec: recv and stride both are (every block aligned).
template <int kRanks>
__global__ void allgather_oneshot_small(DevComm c, const char* send, char* recv, uint32_t bytes, uint32_t stride,
                                        bool send_vec, bool recv_vec) {
  using Packet = LLPacket<kSmallMode>;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  CallState<kSmallMode> call(c, Algo::OneShot, Collective::Allgather);  // the counters first: the pushes wait for the epoch
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;  // a thread per chunk at least (plan.cpp)
  const auto load = [&] { return predicated::load_chunk<1>(send, i, bytes, send_vec); };
  exchange_with_every_rank<kRanks>(call, c, i, bytes, load, [&](const Packet (&w)[2 * kRanks]) {
#pragma unroll
    for (int q = 0; q < kRanks; ++q)
      predicated::store_chunk<1>(recv + size_t(q) * stride, i, bytes, recv_vec,
                                 Packet::chunk_of(w[2 * q], w[2 * q + 1]));
  });
}

}  // namespace hpcolls::kernels
