// The steps of the one-shot LL Bcast, over any set of threads: `first` is the calling thread's
// index among them and `step` their count. The host-launched kernel (bcast/oneshot.cuh) runs them
// over its whole grid, the device API's block-scope broadcast (hpcolls/device/collectives.cuh)
// over the calling block: one protocol, one code.
//
// The root pushes its buffer, read straight from its memory, into the data region of every peer's
// scratch; each non-root copies it out into its own buffer. One remote-store latency for the
// receivers, no barrier; bytes move as they are, any datatype.
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
#include "hpcolls/handshake.cuh"
#include "hpcolls/payload.cuh"

namespace hpcolls {

// Two ranks or more, inside `call`; vec_ok: buf 16-byte aligned, so whole chunks move as one
// vector access; else byte by byte. Threads first, first + step, ... < nranks carry the handshakes
// with those ranks (one each in a host-launched grid, of at least 32 threads). False on a time-out
// (this thread's, or another's it saw).
template <int kMode>
__device__ inline bool bcast_oneshot_steps(CallState<kMode>& call, const device::Comm& c, char* buf, uint32_t bytes,
                                           int root, bool vec_ok, uint32_t first, uint32_t step) {
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const bool is_root = c.rank == root;
  bool ok = !call.broken();
  for (uint32_t peer = first; ok && !is_root && peer < uint32_t(c.nranks); peer += step)
    if (int(peer) != c.rank) send_handshake(call, c, int(peer));
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
  for (uint32_t peer = first; ok && peer < uint32_t(c.nranks); peer += step)
    if (int(peer) != c.rank && int(peer) != root) ok = await_handshake(call, c, int(peer));
  return ok;
}

}  // namespace hpcolls
