// Moving 16-byte payload chunks between the user's buffers and registers, and reducing them.
//
// User buffers are ordinary device memory of any element count and any offset. When both are
// 16-byte aligned, whole chunks move as one vector access; the last partial chunk, and buffers
// aligned only to their scalar component, move element by element. Because every element size
// divides 16 and chunks start at multiples of 16 bytes, no element straddles two chunks. Offsets
// are 32-bit: a message the LL kernels carry fits a scratch half, below 4 GiB (call_state.cuh).
#pragma once
#include <cstdint>

#include "hpcolls/types.h"

namespace hpcolls {

template <size_t kUnit> struct UnitWord;
template <> struct UnitWord<2> { using type = uint16_t; };
template <> struct UnitWord<4> { using type = uint32_t; };
template <> struct UnitWord<8> { using type = uint64_t; };

// kUnit: the scalar alignment of the element type (2, 4 or 8 bytes).
template <size_t kUnit>
__device__ inline uint4 load_chunk(const char* buf, uint32_t chunk, uint32_t bytes, bool vec_ok) {
  const uint32_t off = chunk * uint32_t(kChunkBytes);
  if (vec_ok && off + uint32_t(kChunkBytes) <= bytes) return *reinterpret_cast<const uint4*>(buf + off);
  using W = typename UnitWord<kUnit>::type;
  W words[kChunkBytes / kUnit] = {};
#pragma unroll
  for (uint32_t k = 0; k < kChunkBytes / kUnit; ++k)
    if (off + uint32_t((k + 1) * kUnit) <= bytes) words[k] = reinterpret_cast<const W*>(buf + off)[k];
  uint4 v;
  __builtin_memcpy(&v, words, sizeof(v));
  return v;
}

template <size_t kUnit>
__device__ inline void store_chunk(char* buf, uint32_t chunk, uint32_t bytes, bool vec_ok, uint4 v) {
  const uint32_t off = chunk * uint32_t(kChunkBytes);
  if (vec_ok && off + uint32_t(kChunkBytes) <= bytes) {
    *reinterpret_cast<uint4*>(buf + off) = v;
    return;
  }
  using W = typename UnitWord<kUnit>::type;
  W words[kChunkBytes / kUnit];
  __builtin_memcpy(words, &v, sizeof(v));
#pragma unroll
  for (uint32_t k = 0; k < kChunkBytes / kUnit; ++k)
    if (off + uint32_t((k + 1) * kUnit) <= bytes) reinterpret_cast<W*>(buf + off)[k] = words[k];
}

// Element-wise acc = R(acc, v) over the 16 / sizeof(T) elements of a chunk.
template <typename T, typename R>
__device__ inline uint4 reduce_chunk(uint4 acc, uint4 v) {
  constexpr int n = kChunkBytes / sizeof(T);
  T a[n], b[n];
  __builtin_memcpy(a, &acc, sizeof(acc));
  __builtin_memcpy(b, &v, sizeof(v));
#pragma unroll
  for (int k = 0; k < n; ++k) a[k] = R::apply(a[k], b[k]);
  __builtin_memcpy(&acc, a, sizeof(acc));
  return acc;
}

}  // namespace hpcolls
