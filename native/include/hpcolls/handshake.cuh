// The handshake lines that keep the double-buffering rule (call_state.cuh) true for collectives
// in which not every rank receives from every other: Bcast, Reduce, Reduce_scatter with empty
// blocks.
//
// The rule AllReduce and Allgather rely on, unchanged: a rank sends call e into a peer's half
// (e & 1) once it has finished call e-1. That is safe only if finishing call e-1 proves that every
// peer has finished call e-2 (its last reads of that half). AllReduce and Allgather prove it by
// receiving, in call e-1, data that every peer stored in call e-1, which that peer's kernel did
// only after its kernel e-2 had completed (stream order; griddepcontrol.wait under dependent
// launch). So every kernel on a communicator must keep this invariant:
//
//   (I) a rank finishes call e only after it has received, from every peer, a line that peer
//       stored in call e; and every line a rank stores in call e is awaited by its receiver in
//       call e (so no store of an older call can land after a newer one on the same line).
//
// A Bcast breaks (I) twice: the root receives nothing, and a non-root receives only from the
// root. Acknowledging to the root alone (the root waiting for the receivers' acks, in the call or
// at its next use of the half) mends the first and not the second: in Allreduce(e-1),
// Bcast(e, root R), Allreduce(e+1), a non-root P in call e+1 writes half (e+1) & 1 of a non-root
// Q while Q may still be in call e-1 reading P's lines there (P's completion of e-1 proves only
// that Q *started* e-1, and call e told P only about R); Q then never sees its e-1 data and times
// out, or reads call e+1's. Any collective, any root, may follow, so the fix must be in the call.
//
// So in every call each ordered pair (sender, receiver) that carries no data this call carries
// one handshake line instead: the sender stores it (LL flag only, no payload) at line `sender` of
// the receiver's half at the start of the call, and the receiver awaits it at the end of the
// call. With data pairs that gives (I) for every rank. The data path is not lengthened: a Bcast
// receiver still gets the root's data one remote store after the root arrives; its handshake
// lines, sent by every rank on entry, travel at the same time. What it costs is that a call
// completes only once every rank has entered it, as an AllReduce does: (N-1)^2 extra 16-byte
// stores in a Bcast or Reduce, fewer in a Reduce_scatter (only for empty blocks).
//
// Lines [0, kHandshakeLines) of a half (types.h) are the handshake region (line q: rank q's); a rooted
// kernel's data starts after it. An older call's lines there carry another epoch, so a stale line
// is never taken for this call's, and is never in flight any more (I).
#pragma once
#include <cstdint>

#include "hpcolls/call_state.cuh"
#include "hpcolls/types.h"

namespace hpcolls {

// Our handshake line of this call, into `peer`'s half.
template <int kMode>
__device__ inline void send_handshake(const CallState<kMode>& call, const device::Comm& c, int peer) {
  call.send_line(call.half(peer) + c.rank);
}

// Waits for `peer`'s handshake line of this call in our own half; false on time-out (reported
// against `peer`), or once another thread of the call timed out.
template <int kMode>
__device__ inline bool await_handshake(CallState<kMode>& call, const device::Comm& c, int peer) {
  LLPacket<kMode> w[1];
  return call.receive_lines(call.half(c.rank) + peer, 0, 1u, w, [peer](int) { return peer; });
}

}  // namespace hpcolls
