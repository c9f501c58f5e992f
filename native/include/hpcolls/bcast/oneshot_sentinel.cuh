// One-shot Bcast on the sentinel protocol (sentinel.cuh): the root stores its buffer, read
// straight from the user's memory, as chunks 0.. of every peer's sentinel area; each non-root
// receives them into its own buffer, re-arming what it consumed. Every store is payload: half the
// bytes of the LL kernel's lines, for pure data movement.
//
// The handshakes are the LL Bcast's (bcast/oneshot.cuh, handshake.cuh has the argument): every
// non-root stores a handshake LL line into every other rank's half on entry, here the handshake
// lines at the start of the sentinel half (sentinel_layout.h), and every rank awaits one from each
// peer that sent it no data at the end of the call.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/handshake.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/sentinel.cuh"
#include "hpcolls/sentinel_kernel.cuh"

namespace hpcolls::kernels {

// vec_ok: buf 16-byte aligned. Thread t < nranks also carries the handshake with rank t.
__global__ void bcast_oneshot_sentinel(DevComm c, char* buf, uint32_t bytes, int root, bool vec_ok) {
  constexpr int kU = sentinel::kChunksPerThread;
  const sentinel::ChunkGrid g(bytes);
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  if (c.nranks == 1) return;  // not launched alone (NativeComm::bcast): nothing moves

  CallState<0> call(c, Algo::OneShot, Collective::Bcast);
  const bool is_root = c.rank == root;
  const int peer = int(g.first);  // this thread's handshake partner, if g.first < nranks
  const bool partner = g.first < uint32_t(c.nranks) && peer != c.rank;
  bool ok = !call.broken();
  if (ok && partner && !is_root) send_handshake(call, c, peer);
  if (is_root) {
    for (uint32_t i = g.first; ok && i < g.chunks; i += g.stride)
      sentinel::push_to_peers(call, c, i, load_chunk<1>(buf, i, bytes, vec_ok));
  } else {
    const sentinel::Area own = sentinel::area(call, c, c.rank);
    for (uint32_t base = g.first; ok && base < g.chunks; base += kU * g.stride) {
      uint32_t valid = 0, index[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        index[u] = base + u * g.stride;
        if (index[u] < g.chunks) valid |= 1u << u;
      }
      uint4 got[kU] = {};
      ok = sentinel::receive(call, own, index, valid, got, [root](int) { return root; });
      if (!ok) break;
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (valid >> u & 1) store_chunk<1>(buf, index[u], bytes, vec_ok, got[u]);
    }
  }
  if (ok && partner && peer != root) await_handshake(call, c, peer);
  call.finish();
}

inline cudaError_t launch_bcast_oneshot_sentinel(const DevComm& c, const CollectiveArgs& a) {
  if (c.ll_mode != 0) return cudaErrorInvalidValue;
  return launch_kernel(a, &bcast_oneshot_sentinel, c, static_cast<char*>(a.recv), uint32_t(a.bytes), a.root,
                       a.vec_ok);
}

}  // namespace hpcolls::kernels
