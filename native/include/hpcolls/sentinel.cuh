// The sentinel protocol: every byte a sender stores is payload. The receiver's scratch is armed
// with a 64-bit sentinel S (kSentinel); a sender stores a 16-byte chunk as it is, and the receiver
// polls the chunk's two 8-byte words (each 8-byte aligned store is single-copy atomic) until
// neither is S. Then it writes S back into both words (re-arms them) in the same call, so the
// half is armed again before any peer may store into it (the epoch-parity argument, below and in
// docs/ARCHITECTURE.md, "The sentinel protocol").
//
// Any data must round-trip bitwise, words equal to S included, so a chunk that could be mistaken
// is escaped. With X = kEscapeMark, a chunk (w0, w1) is *plain* when w0 is neither S nor X and
// w1 is not S: it is stored raw, and the receiver, seeing w0 != X, takes it. Otherwise the
// sender stores (X, v) into the payload and one LL element {epoch:code} (32-bit epoch, 32-bit
// code, one 8-byte store) into the chunk's escape word, where v is not S and with the code gives
// back the chunk:
//   code 1, 2: w0 = S or X (2 when X), w1 = v        (w1 is not S)
//   code 3:    w0 = v, w1 = S                         (w0 is neither S nor X)
//   code 4, 5: w0 = S or X (5 when X), w1 = S         (v = 0)
// The receiver, once neither word is S, checks w0 against X, and only then polls the escape word
// until its epoch is this call's (an older call's escape word carries an older epoch; a new
// region's is 0, never a live epoch). No 128-bit mapping of all chunks into chunks free of S
// exists (there are fewer of them), so some bits must travel apart; this puts them in 8 bytes
// per chunk of scratch, never stored for plain data.
//
// Cost on data without S or X: at the sender three 64-bit compares per chunk, at the receiver
// the two compares against S that polling makes anyway and one against X; the stores are the
// chunk and, at the receiver, the re-arm (16 bytes into its own scratch, which the next call's
// data overwrites in L2).
//
// Why the re-arm needs no barrier: call e uses half (e & 1) of the region. Receiver R re-arms the
// words it consumed in call e before its kernel of call e ends; its stores of call e+1 come after
// that kernel ended (stream order; under dependent launch, griddepcontrol.wait waits for the
// whole previous grid and its memory). A peer P stores call e+2 into the same half only after it
// received every peer's call-e+1 data (CallState, handshake.cuh: invariant (I)), R's included, so
// R's re-arm is ordered before P's next data there, as R's last read of call e is in the LL
// argument. The epoch (and so the parity) is shared by all protocols of a communicator: whichever
// protocol ran calls e+1 and e+2, the rule is the same.
#pragma once
#include <cstdint>

#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/payload.cuh"
#include "hpcolls/reduce_ops.cuh"
#include "hpcolls/sentinel_layout.h"

namespace hpcolls::sentinel {

// Chunks a thread of a sentinel kernel receives per round: their loads are in flight together
// (the plan sizes grids by it).
constexpr int kChunksPerThread = kSentinelChunksPerThread;

// One half of a rank's sentinel region, as the kernels address it: chunk i's payload and its
// escape word (sentinel_layout.h).
struct Area {
  uint4* payload;
  uint64_t* escape;
};

// Rank `rank`'s half of this call's parity. The region's chunk count (a division by a constant)
// is the same for every rank.
template <int kMode>
__device__ inline Area area(const CallState<kMode>& call, const DevComm& c, int rank) {
  char* const half = reinterpret_cast<char*>(call.half(rank));
  const uint32_t chunks = sentinel_chunks(c.half_bytes);
  return Area{reinterpret_cast<uint4*>(half + sentinel_payload_offset(chunks)),
              reinterpret_cast<uint64_t*>(half + sentinel_escape_offset())};
}

__device__ inline uint64_t lo_word(uint4 v) { return uint64_t(v.x) | uint64_t(v.y) << 32; }
__device__ inline uint64_t hi_word(uint4 v) { return uint64_t(v.z) | uint64_t(v.w) << 32; }
__device__ inline uint4 chunk_of(uint64_t w0, uint64_t w1) {
  return make_uint4(uint32_t(w0), uint32_t(w0 >> 32), uint32_t(w1), uint32_t(w1 >> 32));
}

__device__ inline void store_words(uint4* dst, uint64_t w0, uint64_t w1) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(dst), "l"(w0), "l"(w1) : "memory");
}
__device__ inline void load_words(const uint4* src, uint64_t& w0, uint64_t& w1) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(w0), "=l"(w1) : "l"(src) : "memory");
}
__device__ inline void store_escape(uint64_t* dst, uint32_t epoch, uint32_t code) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(dst), "l"(uint64_t(epoch) << 32 | code) : "memory");
}
__device__ inline uint64_t load_escape(const uint64_t* src) {
  uint64_t w;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(w) : "l"(src) : "memory");
  return w;
}

// Stores chunk v as chunk i of `to` (a peer's area of this call's half), escaped where it must be.
__device__ inline void send(const Area& to, uint32_t i, uint4 v, uint32_t epoch) {
  const uint64_t w0 = lo_word(v), w1 = hi_word(v);
  const bool w0_special = w0 == kSentinel || w0 == kEscapeMark;
  if (!w0_special && w1 != kSentinel) {  // plain: the common case, one 16-byte store
    store_words(to.payload + i, w0, w1);
    return;
  }
  uint32_t code;
  uint64_t carried;
  if (w1 != kSentinel) {
    code = w0 == kEscapeMark ? 2u : 1u;
    carried = w1;
  } else if (!w0_special) {
    code = 3u;
    carried = w0;
  } else {
    code = w0 == kEscapeMark ? 5u : 4u;
    carried = 0;
  }
  store_escape(to.escape + i, epoch, code);
  store_words(to.payload + i, kEscapeMark, carried);
}

// The chunk an escaped payload (X, carried) stands for, with its escape word's code.
__device__ inline uint4 unescape(uint64_t carried, uint32_t code) {
  switch (code) {
    case 1u: return chunk_of(kSentinel, carried);
    case 2u: return chunk_of(kEscapeMark, carried);
    case 3u: return chunk_of(carried, kSentinel);
    case 4u: return chunk_of(kSentinel, kSentinel);
    default: return chunk_of(kEscapeMark, kSentinel);
  }
}

// Receives the chunks at index[j] of our own area `own`, for each bit j of `pending`, as out[j]:
// polls them all each round until no word of them is the sentinel, resolves the escaped ones
// from their escape words, then re-arms every one. peer_of(j) names the sender of chunk j for a
// time-out's record. False on time-out, or once another thread of the call timed out (nothing
// re-armed then: the communicator is broken).
template <int kN, int kMode, typename PeerOf>
__device__ inline bool receive(CallState<kMode>& call, const Area& own, const uint32_t (&index)[kN], uint32_t pending,
                               uint4 (&out)[kN], PeerOf peer_of) {
  static_assert(kN <= 32, "pending is a 32-bit mask");
  uint64_t w0[kN], w1[kN];
  const uint32_t wanted = pending;
  const auto round = [&] {
#pragma unroll
    for (int j = 0; j < kN; ++j)
      if (pending >> j & 1) load_words(own.payload + index[j], w0[j], w1[j]);
#pragma unroll
    for (int j = 0; j < kN; ++j)
      if ((pending >> j & 1) && w0[j] != kSentinel && w1[j] != kSentinel) pending &= ~(1u << j);
    return pending == 0;
  };
  if (!call.poll_until(round, [&] { return peer_of(__ffs(pending) - 1); })) return false;
  // Escaped chunks (first word X): their escape words, this call's once their epoch is.
  uint32_t escaped = 0;
#pragma unroll
  for (int j = 0; j < kN; ++j)
    if ((wanted >> j & 1) && w0[j] == kEscapeMark) escaped |= 1u << j;
  if (escaped != 0) {
    uint64_t e[kN];
    const auto escape_round = [&] {
#pragma unroll
      for (int j = 0; j < kN; ++j)
        if (escaped >> j & 1) e[j] = load_escape(own.escape + index[j]);
#pragma unroll
      for (int j = 0; j < kN; ++j)
        if ((escaped >> j & 1) && uint32_t(e[j] >> 32) == call.epoch()) {
          escaped &= ~(1u << j);
          out[j] = unescape(w1[j], uint32_t(e[j]));
        }
      return escaped == 0;
    };
    if (!call.poll_until(escape_round, [&] { return peer_of(__ffs(escaped) - 1); })) return false;
  }
#pragma unroll
  for (int j = 0; j < kN; ++j) {
    if (!(wanted >> j & 1)) continue;
    if (w0[j] != kEscapeMark) out[j] = chunk_of(w0[j], w1[j]);
    store_words(own.payload + index[j], kSentinel, kSentinel);  // re-armed for call e + 2
  }
  return true;
}

// Stores chunk v as chunk `index` of every peer's area of this call, from the next rank up, so
// that ranks do not all store into rank 0 first (as CallState::push_to_peers).
template <int kMode>
__device__ inline void push_to_peers(const CallState<kMode>& call, const DevComm& c, uint32_t index, uint4 v) {
  int peer = c.rank;
#pragma unroll 1  // the rank count is a run-time value
  for (int k = 1; k < c.nranks; ++k) {
    peer = peer + 1 == c.nranks ? 0 : peer + 1;
    send(area(call, c, peer), index, v, call.epoch());
  }
}

// The rank-order reduction of kN chunks (bit u of `valid`): rank q's chunk u is chunk
// slot(q) + offset[u] of our area, ours is mine[u]; acc[u] = chunk of rank 0, then combined with
// ranks 1..N-1 in order (the LL kernels' order and operators: the same bits). Each rank's kN
// chunks are polled together. False on time-out.
template <typename T, Op OP, int kN, int kMode, typename Slot>
__device__ inline bool reduce_in_rank_order(CallState<kMode>& call, const DevComm& c, const Area& own, Slot slot,
                                            const uint32_t (&offset)[kN], uint32_t valid, const uint4 (&mine)[kN],
                                            uint4 (&acc)[kN]) {
#pragma unroll 1  // the rank count is a run-time value
  for (int q = 0; q < c.nranks; ++q) {
    uint4 got[kN] = {};
    if (q != c.rank) {
      uint32_t index[kN];
#pragma unroll
      for (int u = 0; u < kN; ++u) index[u] = slot(q) + offset[u];
      if (!receive(call, own, index, valid, got, [q](int) { return q; })) return false;
    }
#pragma unroll
    for (int u = 0; u < kN; ++u) {
      const uint4 v = q == c.rank ? mine[u] : got[u];
      acc[u] = q == 0 ? v : reduce_chunk<T, Reduce<T, OP>>(acc[u], v);
    }
  }
  return true;
}

}  // namespace hpcolls::sentinel
