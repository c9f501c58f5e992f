// One-shot LL Bcast for a small message on 2, 4 or 8 ranks, the rank count fixed at compile time.
// It is to the general kernel (bcast/oneshot.cuh) what allgather/oneshot_small.cuh is to the
// general Allgather: the same result, with what keeps a small call short.
//
// It runs the small Allgather's exchange (exchange_with_every_rank, allgather/oneshot_small.cuh)
// with only the root's block carrying data: thread i owns chunk i; it pushes into slot `rank` of
// every rank's scratch (its own too, so that every slot is polled alike) the root's chunk i on the
// root and an empty chunk elsewhere, advances the epoch as soon as every thread has read it, then
// polls chunk i of every slot at once; a non-root stores the root's. So every rank receives a line
// from every peer in the call, which is what the double-buffering rule asks (handshake.cuh): no
// handshake lines, and the root's data and the non-roots' empty chunks travel together. A
// non-root's empty chunks are N - 1 extra chunk stores per chunk, which the plan bounds by taking
// this kernel for messages of at most 512 B (plan.cpp).
//
// The buffer is the root's input and every other rank's output: the root only loads, the others
// only store.
#pragma once
#include "hpcolls/allgather/oneshot_small.cuh"
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"

namespace hpcolls::kernels {

// vec_ok: buf 16-byte aligned, so whole chunks move as one vector access.
template <int kRanks>
__global__ void bcast_oneshot_small(DevComm c, char* buf, uint32_t bytes, int root, bool vec_ok) {
  using Packet = LLPacket<kSmallMode>;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  CallState<kSmallMode> call(c, Algo::OneShot, Collective::Bcast);  // the counters first: the pushes wait for the epoch
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;  // a thread per chunk at least (plan.cpp)
  const bool is_root = c.rank == root;
  // Zero off the root.
  const auto load = [&] { return predicated::load_chunk<1>(buf, i, is_root ? bytes : 0u, vec_ok); };
  exchange_with_every_rank<kRanks>(call, c, i, bytes, load, [&](const Packet (&w)[2 * kRanks]) {
    if (!is_root) predicated::store_chunk<1>(buf, i, bytes, vec_ok, Packet::chunk_of(w[2 * root], w[2 * root + 1]));
  });
}

}  // namespace hpcolls::kernels
