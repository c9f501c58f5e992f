// The LL128 line: 128 bytes, of which 120 are payload and the last 8 the flag word (the call's
// epoch, zero-extended to 64 bits). A receiver polls the line in its own scratch until the flag
// word equals the epoch of its call, and then takes the 120 payload bytes read in the same load.
// Unlike the LL line (ll_line.cuh: 8 payload bytes in every 16, each 8-byte half carrying its own
// flag) one flag vouches for 15 data words, so that is only sound where the hardware makes a
// 128-byte line written by one warp store visible to the reader as one unit, and a warp load of
// the line sees it whole. No document promises that (NCCL relies on it for NVLink; the seed
// paper's reviewers note it is undocumented), so hpcolls uses LL128 only where the torn-line
// probe (ll128_probe.cuh) found no torn line on this communicator's GPUs and paths.
//
// Layout: 16 bytes per lane, 8 lanes per line. A warp moves one *tile* of 4 lines (512 bytes:
// lane l at byte 16 l) with one st.volatile.global.v2.u64 per lane, so each line is one aligned
// 128-byte segment of a single coalesced warp store (and, read back, of a single warp load). The
// last lane of each line (lane % 8 == 7) carries payload word 14 of its line and the flag. Why 16
// bytes a lane and not 8: 8 lanes of 16 bytes are NCCL's LL128 layout, the widest vector store a
// lane has, and the one whose atomicity NVLink is reported to keep; with 8 bytes a lane a warp
// would store 2 lines per instruction, twice the instructions for the same bytes.
//
// Payload inside a tile: words 0..59 (8 bytes each), word 15 L + k in line L at word k. Kernels
// work on 16-byte chunks (payload.cuh), so a tile carries 30 chunks: lane c < 30 of the *chunk
// view* holds chunk c (words 2c, 2c+1); the *line view* is what lanes store and load. The two views
// are exchanged with warp shuffles (lines_of_chunks, chunks_of_lines): no shared memory, no
// barrier beyond the shuffles' own.
//
// Every function here is warp-collective: all 32 lanes of a converged warp call it together.
#pragma once
#include <cstdint>

#include "hpcolls/ll128_layout.h"

namespace hpcolls {

constexpr unsigned kFullWarp = 0xffffffffu;

// A line where it lives: scratch is an array of tiles of 4 lines, 128-byte aligned.
struct alignas(kLL128LineBytes) LL128Line {
  uint64_t words[kLL128LineBytes / 8];
};
static_assert(sizeof(LL128Line) == kLL128LineBytes, "an LL128 line is 128 bytes");

__device__ inline uint32_t warp_lane() { return threadIdx.x & 31u; }

// True for the lane whose second word is its line's flag word.
__device__ inline bool ll128_flag_lane(uint32_t lane) { return (lane & 7u) == 7u; }

// This lane's 16 bytes of a tile (line view), as stored or as read.
struct LL128Packet {
  ulonglong2 words;  // {payload, payload}, or {payload word 14, flag} on a flag lane

  // Stores the tile at `tile` (128-byte aligned): this lane's payload words, the flag lanes' second
  // word replaced by `flag`. One 16-byte volatile store per lane: the warp's store is 4 whole lines.
  __device__ static void write(LL128Line* tile, ulonglong2 payload, uint64_t flag) {
    const uint32_t lane = warp_lane();
    if (ll128_flag_lane(lane)) payload.y = flag;
    uint64_t* p = reinterpret_cast<uint64_t*>(tile) + 2 * lane;
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(payload.x), "l"(payload.y) : "memory");
  }

  // One 16-byte volatile load per lane: the warp's load is the tile's 4 lines as they are now.
  __device__ static LL128Packet read(const LL128Line* tile) {
    LL128Packet pk;
    const uint64_t* p = reinterpret_cast<const uint64_t*>(tile) + 2 * warp_lane();
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(pk.words.x), "=l"(pk.words.y) : "l"(p) : "memory");
    return pk;
  }

  // This lane's line's flag word, as read (from the line's flag lane).
  __device__ uint64_t line_flag() const { return __shfl_sync(kFullWarp, words.y, int(warp_lane() | 7u)); }

  // Warp-collective: every one of the tile's 4 lines carries `flag`, so the whole tile is that call's.
  __device__ bool holds(uint64_t flag) const {
    return __all_sync(kFullWarp, !ll128_flag_lane(warp_lane()) || words.y == flag);
  }
};

namespace ll128_detail {
__device__ inline uint64_t shfl64(uint64_t v, uint32_t src) {
  const uint32_t lo = __shfl_sync(kFullWarp, uint32_t(v), int(src));
  const uint32_t hi = __shfl_sync(kFullWarp, uint32_t(v >> 32), int(src));
  return (uint64_t(hi) << 32) | lo;
}
}  // namespace ll128_detail

// Chunk view -> line view. Lane c < 30 holds chunk c of the tile's payload (lanes 30, 31: nothing
// that is read); returns this lane's payload words of the line view. Lane l (line L = l / 8,
// position p = l % 8) carries payload words w0 = 15 L + 2 p and w0 + 1 (position 7: w0 only; its
// second word becomes the flag in write()). Word w sits in chunk lane w / 2, low half when w is
// even: for even w0 both words are lane w0/2's {lo, hi}; for odd w0 they are lane w0/2's hi and
// lane w0/2+1's lo. So each lane needs one low word and one high word, from at most two lanes:
// two 64-bit shuffles.
__device__ inline ulonglong2 lines_of_chunks(uint4 chunk) {
  const uint32_t lane = warp_lane();
  const uint32_t w0 = kLL128WordsPerLine * (lane >> 3) + 2 * (lane & 7u);
  const bool odd = w0 & 1u;
  const uint64_t lo = (uint64_t(chunk.y) << 32) | chunk.x, hi = (uint64_t(chunk.w) << 32) | chunk.z;
  const uint64_t from_lo = ll128_detail::shfl64(lo, odd ? (w0 >> 1) + 1 : (w0 >> 1));  // lane <= 30
  const uint64_t from_hi = ll128_detail::shfl64(hi, w0 >> 1);
  return odd ? make_ulonglong2(from_hi, from_lo) : make_ulonglong2(from_lo, from_hi);
}

// Line view -> chunk view: the inverse of lines_of_chunks. Chunk lane c needs words 2c and 2c+1.
// Word w is in line L = w / 15 at position q = w % 15, held by lane 8 L + q / 2 (low word when q
// is even). For even q <= 12 both words are that lane's {lo, hi}; otherwise (odd q, or q = 14, the
// last payload word of a line) word 2c is the high word of lane 8 L + q / 2 and word 2c + 1 the low
// word of the lane holding 2c + 1. A flag lane offers its payload word (not the flag) as its high
// word, which is the word asked of it in the q = 14 case. Lanes 30, 31 return nothing meaningful.
__device__ inline uint4 chunks_of_lines(ulonglong2 words) {
  const uint32_t lane = warp_lane();
  const uint32_t c = lane < kLL128TileChunks ? lane : kLL128TileChunks - 1;
  const uint32_t w = 2 * c, line = w / kLL128WordsPerLine, q = w - kLL128WordsPerLine * line;
  const uint32_t w1 = w + 1, line1 = w1 / kLL128WordsPerLine, q1 = w1 - kLL128WordsPerLine * line1;
  const uint32_t holder = 8 * line + q / 2, next_holder = 8 * line1 + q1 / 2;
  const bool split = (q & 1u) || q == 2 * (kLL128LanesPerLine - 1);  // word 2c is a high word
  const uint64_t offered_hi = ll128_flag_lane(lane) ? words.x : words.y;
  const uint64_t from_lo = ll128_detail::shfl64(words.x, split ? next_holder : holder);
  const uint64_t from_hi = ll128_detail::shfl64(offered_hi, holder);
  const uint64_t first = split ? from_hi : from_lo, second = split ? from_lo : from_hi;
  return make_uint4(uint32_t(first), uint32_t(first >> 32), uint32_t(second), uint32_t(second >> 32));
}

}  // namespace hpcolls
