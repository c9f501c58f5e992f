// Moving LL128 tiles (ll128_line.cuh) in a collective kernel: a warp stores a tile of 30 payload
// chunks to a peer, waits for a peer's tile with CallState's bounded polling, and reduces the N
// ranks' tiles in rank order. Every function is warp-collective: the whole warp calls it with the
// same arguments (tile indices, ranks), and its chunk-view lane c < 30 holds chunk c of the tile.
//
// Where the lines go: this call's half of each rank's LL128 region, by epoch parity as the LL
// kernels (call_state.cuh): an LL128 kernel gets the LL128 region as its DevComm's scratch and
// half_bytes (NativeComm::dev_of), both halves 128-byte aligned. Flags are the epoch (a
// 64-bit word below 2^32), so a line left by an earlier call of the same parity (flag e-2), by the
// torn-line probe (flag >= 2^63) or never written (0) is never taken for this call's.
#pragma once
#include <cstdint>

#include "hpcolls/call_state.cuh"
#include "hpcolls/ll128_line.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/reduce_ops.cuh"

namespace hpcolls {

// This call's half of `rank`'s LL128 region.
template <int kMode>
__device__ inline LL128Line* ll128_half(const CallState<kMode>& call, const DevComm& c, int rank) {
  return call.in_half(static_cast<LL128Line*>(c.scratch[rank]));
}

// Stores the chunk-view tile `chunk` as this call's lines at `dst`.
template <int kMode>
__device__ inline void send_tile(const CallState<kMode>& call, LL128Line* dst, uint4 chunk) {
  LL128Packet::write(dst, lines_of_chunks(chunk), call.epoch());
}

// Peers whose tiles one warp polls together: their loads overlap instead of adding up.
constexpr int kLL128PeersPolledTogether = 4;

// Waits for the tiles at first + g * stride_lines, for each bit g set in `pending`, to hold this
// call's lines; packets[g] is then tile g as read. False on time-out (reported against
// peer_of(g) of the first tile still missing) or when the communicator is broken.
template <int kMode, int kG, typename PeerOf>
__device__ inline bool receive_tiles(CallState<kMode>& call, const LL128Line* first, uint32_t stride_lines,
                                     uint32_t pending, LL128Packet (&packets)[kG], PeerOf peer_of) {
  const uint64_t flag = call.epoch();
  const auto round = [&] {
#pragma unroll
    for (int g = 0; g < kG; ++g)
      if (pending >> g & 1) packets[g] = LL128Packet::read(first + g * stride_lines);
#pragma unroll
    for (int g = 0; g < kG; ++g)  // pending is the same on every lane: holds() is called by all
      if ((pending >> g & 1) && packets[g].holds(flag)) pending &= ~(1u << g);
    return pending == 0;
  };
  return call.warp_poll_until(round, [&] { return peer_of(__ffs(pending) - 1); });
}

// The rank-order reduction of one tile: slot q of `slots` (stride slot_lines) holds rank q's tile,
// except our own, `mine`. acc = tile 0 op tile 1 op ... op tile N-1, left to right, on every rank
// alike. False on time-out (acc is then not to be used).
template <typename T, Op OP, int kMode>
__device__ inline bool reduce_tile_in_rank_order(CallState<kMode>& call, const DevComm& c, const LL128Line* slots,
                                                 uint32_t slot_lines, uint4 mine, uint4& acc) {
  constexpr int kG = kLL128PeersPolledTogether;
  acc = mine;
#pragma unroll 1
  for (int q0 = 0; q0 < c.nranks; q0 += kG) {
    uint32_t pending = 0;
#pragma unroll
    for (int g = 0; g < kG; ++g)
      if (q0 + g < c.nranks && q0 + g != c.rank) pending |= 1u << g;
    LL128Packet tiles[kG];
    if (pending != 0 &&
        !receive_tiles(call, slots + q0 * slot_lines, slot_lines, pending, tiles, [q0](int g) { return q0 + g; }))
      return false;
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      const int q = q0 + g;
      if (q >= c.nranks) break;  // the same on every lane
      const uint4 v = q == c.rank ? mine : chunks_of_lines(tiles[g].words);
      acc = q == 0 ? v : reduce_chunk<T, Reduce<T, OP>>(acc, v);
    }
  }
  return true;
}

// Waits for one tile from `peer` at `src` and returns it in the chunk view. False on time-out.
template <int kMode>
__device__ inline bool receive_tile(CallState<kMode>& call, const LL128Line* src, int peer, uint4& out) {
  LL128Packet tile[1];
  if (!receive_tiles(call, src, 0, 1u, tile, [peer](int) { return peer; })) return false;
  out = chunks_of_lines(tile[0].words);
  return true;
}

}  // namespace hpcolls
