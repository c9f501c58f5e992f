// One-shot LL Allgather: every rank pushes its block, read straight from the user's send buffer,
// into slot `rank` of every peer's scratch, copies it into its own block of the receive buffer,
// then copies each peer's slot out of its own scratch into that peer's block. One remote-store
// latency, no barrier, no reduction: bytes move as they are, any datatype.
//
// Every rank receives from every peer in each call, as in AllReduce, so the double-buffering
// rule of CallState holds across any mix of the two on one communicator: a rank sends call e
// only after receiving every peer's data of call e-1.
//
// In place (MPI_IN_PLACE: the send block is the receive buffer's own block): the own block is
// read for the pushes and never written; the other blocks are only written.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"

namespace hpcolls::kernels {

// bytes: one rank's block; stride: bytes from one block of the receive buffer to the next
// (bytes for a whole Allgather, more for a piece of one). vec_ok: send, recv and stride all
// 16-byte aligned, so whole chunks move as one vector access; else byte by byte.
template <int kMode>
__global__ void allgather_oneshot(DevComm c, const char* send, char* recv, uint32_t bytes, uint32_t stride,
                                  bool vec_ok) {
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t step = gridDim.x * blockDim.x;
  char* const own_block = recv + size_t(c.rank) * stride;
  const bool copy_own = send != own_block;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch();

  if (c.nranks == 1) {  // alone: a copy, no scratch and no epoch (no peer waits on this rank)
    for (uint32_t i = first; copy_own && i < chunks; i += step)
      store_chunk<1>(own_block, i, bytes, vec_ok, load_chunk<1>(send, i, bytes, vec_ok));
    return;
  }

  CallState<kMode> call(c, Algo::OneShot, Collective::Allgather);
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
  call.finish();
}

template <int kMode>
cudaError_t launch_allgather_oneshot(const DevComm& c, const CollectiveArgs& a) {
  if (c.ll_mode != kMode) return cudaErrorInvalidValue;
  return launch_kernel(a, &allgather_oneshot<kMode>, c, static_cast<const char*>(a.send), static_cast<char*>(a.recv),
                       uint32_t(a.bytes), uint32_t(a.stride), a.vec_ok);
}

}  // namespace hpcolls::kernels
