// One-shot Allgather on the sentinel protocol (sentinel.cuh): every rank stores its block, read
// straight from the user's send buffer, as slot `rank` (chunks rank * chunks + i) of every peer's
// sentinel area, copies it into its own block of the receive buffer, then receives each peer's
// slot into that peer's block, re-arming what it consumed. Bytes move as they are, any datatype;
// every store is payload, half the bytes of the LL kernel's lines.
//
// Every rank receives from every peer in each call, as in the LL Allgather, so the
// double-buffering rule (call_state.cuh) holds across any mix of collectives and protocols.
//
// In place (the send block is the receive buffer's own block): the own block is read for the
// pushes and never written; the other blocks are only written.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/sentinel.cuh"
#include "hpcolls/sentinel_kernel.cuh"

namespace hpcolls::kernels {

// bytes: one rank's block; stride: bytes from one block of the receive buffer to the next.
// vec_ok: send, recv and stride all 16-byte aligned.
__global__ void allgather_oneshot_sentinel(DevComm c, const char* send, char* recv, uint32_t bytes, uint32_t stride,
                                           bool vec_ok) {
  constexpr int kU = sentinel::kChunksPerThread;
  const sentinel::ChunkGrid g(bytes);
  char* const own_block = recv + size_t(c.rank) * stride;
  const bool copy_own = send != own_block;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  if (c.nranks == 1) {  // alone: a copy, no scratch and no epoch (no peer waits on this rank)
    for (uint32_t i = g.first; copy_own && i < g.chunks; i += g.stride)
      store_chunk<1>(own_block, i, bytes, vec_ok, load_chunk<1>(send, i, bytes, vec_ok));
    return;
  }

  CallState<0> call(c, Algo::OneShot, Collective::Allgather);
  bool ok = !call.broken();
  const uint32_t my_slot = uint32_t(c.rank) * g.chunks;
  for (uint32_t i = g.first; ok && i < g.chunks; i += g.stride) {
    const uint4 v = load_chunk<1>(send, i, bytes, vec_ok);
    sentinel::push_to_peers(call, c, my_slot + i, v);
    if (copy_own) store_chunk<1>(own_block, i, bytes, vec_ok, v);
  }
  // Item j: chunk j - q * chunks of rank q's block, q = j / chunks (its index in our area is j).
  const sentinel::Area own = sentinel::area(call, c, c.rank);
  const uint32_t items = g.chunks * uint32_t(c.nranks);
  for (uint32_t base = g.first; ok && base < items; base += kU * g.stride) {
    uint32_t valid = 0, index[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      index[u] = base + u * g.stride;
      if (index[u] < items && index[u] / g.chunks != uint32_t(c.rank)) valid |= 1u << u;
    }
    if (valid == 0) continue;
    uint4 got[kU] = {};
    ok = sentinel::receive(call, own, index, valid, got,
                          [&](int u) { return int((base + uint32_t(u) * g.stride) / g.chunks); });
    if (!ok) break;
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      if (!(valid >> u & 1)) continue;
      const uint32_t q = index[u] / g.chunks;
      store_chunk<1>(recv + size_t(q) * stride, index[u] - q * g.chunks, bytes, vec_ok, got[u]);
    }
  }
  call.finish();
}

inline cudaError_t launch_allgather_oneshot_sentinel(const DevComm& c, const CollectiveArgs& a) {
  if (c.ll_mode != 0) return cudaErrorInvalidValue;
  return launch_kernel(a, &allgather_oneshot_sentinel, c, static_cast<const char*>(a.send),
                       static_cast<char*>(a.recv), uint32_t(a.bytes), uint32_t(a.stride), a.vec_ok);
}

}  // namespace hpcolls::kernels
