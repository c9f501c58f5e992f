// One-shot LL Bcast: the root pushes its buffer, read straight from the user's memory, into the
// data region of every peer's scratch; each non-root copies it out into its own buffer. One
// remote-store latency for the receivers, no barrier; bytes move as they are, any datatype.
//
// Non-roots receive only from the root and the root receives nothing, which alone would break the
// double-buffering rule when any collective follows on the communicator (handshake.cuh has the
// argument and the hazard): so every non-root stores a handshake line into every other rank's
// half on entry, and every rank awaits a handshake line from each peer that sent it no data (the
// root: every non-root; a non-root: every other non-root) at the end of the call.
//
// The buffer is the root's input and every other rank's output: nothing to do in place.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/handshake.cuh"
#include "hpcolls/payload.cuh"

namespace hpcolls::kernels {

// vec_ok: buf 16-byte aligned, so whole chunks move as one vector access; else byte by byte.
// Thread t < nranks also carries the handshake with rank t.
template <int kMode>
__global__ void bcast_oneshot(DevComm c, char* buf, uint32_t bytes, int root, bool vec_ok) {
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t step = gridDim.x * blockDim.x;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch();
  if (c.nranks == 1) return;  // not launched alone (NativeComm::bcast): nothing moves

  CallState<kMode> call(c, Algo::OneShot, Collective::Bcast);
  const bool is_root = c.rank == root;
  const int peer = int(first);  // this thread's handshake partner, if first < nranks
  const bool partner = first < uint32_t(c.nranks) && peer != c.rank;
  bool ok = !call.broken();
  if (ok && partner && !is_root) send_handshake(call, c, peer);
  if (is_root) {
    for (uint32_t i = first; ok && i < chunks; i += step)
      call.push_to_peers(uint32_t(kHandshakeLines) + i * uint32_t(kLinesPerChunk), load_chunk<1>(buf, i, bytes, vec_ok));
  } else {
    const LLLine* const data = call.half(c.rank) + kHandshakeLines;
    for (uint32_t i = first; ok && i < chunks; i += step) {
      uint4 v;
      ok = call.receive_chunk(data + i * uint32_t(kLinesPerChunk), root, v);
      if (ok) store_chunk<1>(buf, i, bytes, vec_ok, v);
    }
  }
  if (ok && partner && peer != root) await_handshake(call, c, peer);
  call.finish();
}

template <int kMode>
cudaError_t launch_bcast_oneshot(const DevComm& c, const CollectiveArgs& a) {
  if (c.ll_mode != kMode) return cudaErrorInvalidValue;
  return launch_kernel(a, &bcast_oneshot<kMode>, c, static_cast<char*>(a.recv), uint32_t(a.bytes), a.root, a.vec_ok);
}

}  // namespace hpcolls::kernels
