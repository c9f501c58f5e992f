// The sentinel region's layout and its two reserved 64-bit patterns, shared by the host (which
// arms the region at allocation and sizes the plans) and the kernels (sentinel.cuh).
//
// Each half of the region (double buffering by epoch parity, call_state.cuh) is, in this order:
//   [handshake LL lines: kHandshakeLines x 16 B]  the rooted collectives' handshakes (handshake.cuh)
//   [escape words: 8 B per chunk]                 one LL element {epoch:code} per payload chunk
//   [payload: 16 B per chunk]                     armed with kSentinel; a call's data lands here
// The partition is fixed by the half's size, never by a call's message: a word of the payload
// area is only ever kSentinel or some call's data, and a word of the escape area only ever an LL
// element (or zero), whatever mix of message sizes ran before. A call numbers its chunks from the
// payload area's start (slot q of a one-shot call at q * chunks), and chunk i's escape word is
// the escape area's word i.
#pragma once
#include <cstddef>
#include <cstdint>

namespace hpcolls {

// The sentinel: a payload word equal to it has not arrived. The escape mark: a chunk whose first
// word is it was escaped (sentinel.cuh). Both chosen unlike data an HPC code holds: neither is 0,
// all ones, a small integer, a float64 NaN or infinity, nor made of float32 NaNs, infinities or
// small values (as float64: 1.0e126 and -7.9e17 with scattered mantissa bits; as two float32,
// low word first: 1.14e7, 1.07e16 and -1.5e-25, -331.76). Data equal to either still round-trips (the escape).
constexpr uint64_t kSentinel = 0x5A17C3E94B2D86F1ull;
constexpr uint64_t kEscapeMark = 0xC3A5E1D7963B4F28ull;

// Handshake lines before the escape area (as types.h's kHandshakeLines: one per rank).
constexpr uint64_t kSentinelHandshakeBytes = 32 * 16;
// Bytes of the half a payload chunk costs: its 16 payload bytes and its 8-byte escape word.
constexpr uint64_t kSentinelChunkCost = 24;

#if defined(__CUDACC__)
#define HPCOLLS_HOST_DEVICE __host__ __device__
#else
#define HPCOLLS_HOST_DEVICE
#endif

// Payload chunks one half holds (the escape area's rounding to 16 bytes taken off first).
HPCOLLS_HOST_DEVICE inline uint32_t sentinel_chunks(uint64_t half_bytes) {
  const uint64_t fixed = kSentinelHandshakeBytes + 16;
  return half_bytes > fixed ? uint32_t((half_bytes - fixed) / kSentinelChunkCost) : 0u;
}
HPCOLLS_HOST_DEVICE inline uint64_t sentinel_escape_offset() { return kSentinelHandshakeBytes; }
HPCOLLS_HOST_DEVICE inline uint64_t sentinel_payload_offset(uint32_t chunks) {
  return kSentinelHandshakeBytes + (uint64_t(chunks) * 8 + 15) / 16 * 16;
}

#undef HPCOLLS_HOST_DEVICE

}  // namespace hpcolls
