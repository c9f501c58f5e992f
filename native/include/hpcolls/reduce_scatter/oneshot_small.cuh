// One-shot LL Reduce_scatter for a small message on 2, 4 or 8 ranks, the rank count fixed at
// compile time; Reduce runs it too, as a Reduce_scatter of the root's block only
// (native/hpcolls/reduce_oneshot.cpp). It is to the general kernel (reduce_scatter/oneshot.cuh) what
// allreduce/oneshot_small.cuh is to the general AllReduce: the same protocol, slots, handshakes
// and result, with what keeps a small call short.
//
// Thread i owns chunk i of every block: it loads chunk i of each block first (predicated, so the
// loads of all blocks are in flight together and none is branched around), pushes chunk i of
// block q into slot `rank` of rank q's scratch (its own block into its own slot, so that every
// slot is polled and reduced alike), advances the epoch as soon as every thread has read it, then,
// where its own block has a chunk i, polls chunk i of every slot at once, reduces the N chunks
// strictly in rank order and stores the result. A slot is laid out as the small AllReduce's
// (chunk i's lines at i and largest + i, so a warp's stores and loads cover whole cache lines),
// after the half's handshake lines. Threads 0..N-1 carry the handshakes of empty blocks
// (handshake.cuh): thread q stores ours into peer q's half when q's block is empty, and awaits
// q's in ours when our block is.
//
// In place: a thread makes every load before any store, and result chunk i covers only block 0's
// chunk i (NativeComm::reduce_scatter declines the other layouts), which this thread loaded.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/handshake.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/reduce_ops.cuh"

namespace hpcolls::kernels {

// b: each rank's block of the send buffer. largest: chunks of the largest block (a slot's
// chunks). send_vec, recv_vec: the buffers 16-byte aligned (a block moves whole chunks as vectors
// where its start is aligned too). what: Reduce_scatter or Reduce, for a time-out's record.
template <typename T, Op OP, int kRanks>
__global__ void reduce_scatter_oneshot_small(DevComm c, const char* send, char* recv, BlockLayout b, uint32_t largest,
                                             bool send_vec, bool recv_vec, Collective what) {
  constexpr size_t kUnit = Unit<T>::value;
  using Packet = LLPacket<kSmallMode>;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  CallState<kSmallMode> call(c, Algo::OneShot, what);  // the counters first: the pushes wait for the epoch
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;  // a thread per chunk at least (plan.cpp)
  const uint32_t slot_lines = largest * uint32_t(kLinesPerChunk);
  const uint32_t my_slot = uint32_t(kHandshakeLines) + uint32_t(c.rank) * slot_lines;
  uint4 part[kRanks];  // chunk i of each block; zero where a block has no chunk i
  bool has[kRanks];
#pragma unroll
  for (int q = 0; q < kRanks; ++q) {
    has[q] = i < (b.bytes[q] + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
    part[q] = predicated::load_chunk<kUnit>(send + b.offset[q], i, b.bytes[q],
                                            send_vec && b.offset[q] % uint32_t(kChunkBytes) == 0);
  }
  const bool ok = !call.broken();
  const int peer = int(i);  // this thread's handshake partner, if i < kRanks
  const bool partner = i < uint32_t(kRanks) && peer != c.rank;
  if (ok && partner && b.bytes[peer] == 0) send_handshake(call, c, peer);
  if (ok) {
#pragma unroll
    for (int q = 0; q < kRanks; ++q) {
      if (!has[q]) continue;
      LLLine* const to = call.half(q) + my_slot + i;
      call.send_chunk(to, to + largest, part[q]);
    }
  }
  // Every thread has read the epoch: advance it now, while the data is on its way.
  call.finish();
  const uint32_t own_bytes = b.bytes[c.rank];
  if (ok && own_bytes == 0 && partner) {
    await_handshake(call, c, peer);
    return;
  }
  if (!ok || i * uint32_t(kChunkBytes) >= own_bytes) return;
  Packet w[2 * kRanks];
  if (!call.template receive_every_rank<kRanks>(call.half(c.rank) + kHandshakeLines, slot_lines, i, largest, w))
    return;
  uint4 acc = Packet::chunk_of(w[0], w[1]);  // strictly in rank order
#pragma unroll
  for (int q = 1; q < kRanks; ++q) acc = reduce_chunk<T, Reduce<T, OP>>(acc, Packet::chunk_of(w[2 * q], w[2 * q + 1]));
  predicated::store_chunk<kUnit>(recv, i, own_bytes, recv_vec, acc);
}

}  // namespace hpcolls::kernels
