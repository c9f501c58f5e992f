// The LL128 line's sizes, for host and device code alike (the line itself, its store and its poll
// are in ll128_line.cuh): 128-byte lines of 120 payload bytes and one 8-byte flag word, moved by a
// warp as tiles of 4 lines (16 bytes a lane) that carry 30 16-byte chunks.
#pragma once
#include <cstddef>
#include <cstdint>

namespace hpcolls {

constexpr uint32_t kLL128LineBytes = 128;
constexpr uint32_t kLL128LinePayloadBytes = 120;
constexpr uint32_t kLL128WordsPerLine = 15;  // 8-byte payload words; the 16th is the flag
constexpr uint32_t kLL128LanesPerLine = 8;   // 16 bytes a lane
constexpr uint32_t kLL128TileLines = 4;      // 32 lanes x 16 bytes: one warp store
constexpr uint32_t kLL128TileBytes = kLL128TileLines * kLL128LineBytes;                 // 512
constexpr uint32_t kLL128TilePayloadBytes = kLL128TileLines * kLL128LinePayloadBytes;  // 480
constexpr uint32_t kLL128TileChunks = kLL128TilePayloadBytes / 16;                     // 30
static_assert(kLL128TilePayloadBytes % 16 == 0, "a tile carries whole 16-byte chunks");

// Tiles of a message of `bytes` bytes (whole 16-byte chunks, 30 to a tile); the plan counts them
// in size_t, the kernels in 32 bits (a message they take fits a scratch half, below 4 GiB).
template <typename Count>
#ifdef __CUDACC__
__host__ __device__
#endif
inline constexpr Count ll128_tiles_of(Count bytes) {
  return ((bytes + 15) / 16 + kLL128TileChunks - 1) / kLL128TileChunks;
}

}  // namespace hpcolls
