// The steps of the one-shot LL Allgather, over any set of threads: `first` is the calling
// thread's index among them and `step` their count. The host-launched kernel (allgather/oneshot.cuh)
// runs them over its whole grid, the device API's block-scope allgather
// (hpcolls/device/collectives.cuh) over the calling block: one protocol, one code.
//
// Every rank pushes its block, read straight from the send buffer, into slot `rank` of every
// peer's scratch, copies it into its own block of the receive buffer, then copies each peer's slot
// out of its own scratch into that peer's block. One remote-store latency, no barrier, no
// reduction: bytes move as they are, any datatype.
//
// Every rank receives from every peer in each call, as in AllReduce, so the double-buffering
// rule of CallState holds across any mix of the two on one communicator: a rank sends call e
// only after receiving every peer's data of call e-1.
//
// In place (the send block is the receive buffer's own block): the own block is read for the
// pushes and never written; the other blocks are only written.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/payload.cuh"

namespace hpcolls {

// bytes: one rank's block; stride: bytes from one block of the receive buffer to the next.
// vec_ok: send, recv and stride all 16-byte aligned, so whole chunks move as one vector access;
// else byte by byte.

// One rank alone: a copy of its own block, no scratch and no epoch (no peer waits on this rank).
__device__ inline void allgather_alone(const device::Comm& c, const char* send, char* recv, uint32_t bytes,
                                       uint32_t stride, bool vec_ok, uint32_t first, uint32_t step) {
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  char* const own_block = recv + size_t(c.rank) * stride;
  for (uint32_t i = first; send != own_block && i < chunks; i += step)
    store_chunk<1>(own_block, i, bytes, vec_ok, load_chunk<1>(send, i, bytes, vec_ok));
}

// Two ranks or more, inside `call`. False on a time-out (this thread's, or another's it saw).
template <int kMode>
__device__ inline bool allgather_oneshot_steps(CallState<kMode>& call, const device::Comm& c, const char* send,
                                               char* recv, uint32_t bytes, uint32_t stride, bool vec_ok,
                                               uint32_t first, uint32_t step) {
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  char* const own_block = recv + size_t(c.rank) * stride;
  const bool copy_own = send != own_block;
  const uint32_t slot_lines = chunks * uint32_t(kLinesPerChunk);
  bool ok = !call.broken();
  for (uint32_t i = first; ok && i < chunks; i += step) {
    const uint4 v = load_chunk<1>(send, i, bytes, vec_ok);
    call.push_to_peers(uint32_t(c.rank) * slot_lines + i * uint32_t(kLinesPerChunk), v);
    if (copy_own) store_chunk<1>(own_block, i, bytes, vec_ok, v);
  }
  // Item g: chunk i of rank q's block, q = g / chunks.
  const LLLine* const slots = call.half(c.rank);
  const uint32_t items = chunks * uint32_t(c.nranks);
  for (uint32_t g = first; ok && g < items; g += step) {
    const uint32_t q = g / chunks, i = g - q * chunks;
    if (q == uint32_t(c.rank)) continue;
    uint4 v;
    ok = call.receive_chunk(slots + q * slot_lines + i * uint32_t(kLinesPerChunk), int(q), v);
    if (ok) store_chunk<1>(recv + size_t(q) * stride, i, bytes, vec_ok, v);
  }
  return ok;
}

}  // namespace hpcolls
