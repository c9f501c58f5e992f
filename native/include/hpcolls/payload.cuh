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
template <> struct UnitWord<1> { using type = uint8_t; };
template <> struct UnitWord<2> { using type = uint16_t; };
template <> struct UnitWord<4> { using type = uint32_t; };
template <> struct UnitWord<8> { using type = uint64_t; };

// kUnit: the scalar alignment of the element type (1, 2, 4 or 8 bytes).
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

// Branch-free forms of load_chunk and store_chunk, for a kernel whose thread handles one chunk:
// the vector access and every element access are each issued under their own predicate (PTX @p)
// instead of behind branches. A branch there split the kernel's entry into blocks, and the
// scheduler then either issued the counters' load after the chunk's (and their round trips no
// longer overlapped fully) or stalled on the epoch before issuing the chunk's load
// (docs/PERFORMANCE.md). The accesses not taken still cost an issue slot each, which a loop over
// many chunks would pay every trip; there the branchy forms above are cheaper.
namespace predicated {

// asm volatile: kept in program order with the other volatile accesses and griddepcontrol.wait
// (dependent_launch.cuh), which these loads must follow.
#define HPCOLLS_PREDICATED_SCALAR(W, PTX, REG)                                                       \
  __device__ inline W load(bool take, const W* p) {                                                 \
    W v = 0;                                                                                        \
    asm volatile("{ .reg .pred q; setp.ne.u32 q, %2, 0; @q ld.global." PTX " %0, [%1]; }"            \
                 : "+" REG(v) : "l"(p), "r"(uint32_t(take)));                                       \
    return v;                                                                                       \
  }                                                                                                 \
  __device__ inline void store(bool take, W* p, W v) {                                              \
    asm volatile("{ .reg .pred q; setp.ne.u32 q, %0, 0; @q st.global." PTX " [%1], %2; }"            \
                 ::"r"(uint32_t(take)), "l"(p), REG(v) : "memory");                                 \
  }
HPCOLLS_PREDICATED_SCALAR(uint16_t, "u16", "h")
HPCOLLS_PREDICATED_SCALAR(uint32_t, "u32", "r")
HPCOLLS_PREDICATED_SCALAR(uint64_t, "u64", "l")
#undef HPCOLLS_PREDICATED_SCALAR
// Bytes move through 16-bit registers (PTX has no 8-bit ones): ld.u8 zero-extends, st.u8 keeps the low byte.
__device__ inline uint8_t load(bool take, const uint8_t* p) {
  uint16_t v = 0;
  asm volatile("{ .reg .pred q; setp.ne.u32 q, %2, 0; @q ld.global.u8 %0, [%1]; }"
               : "+h"(v) : "l"(p), "r"(uint32_t(take)));
  return uint8_t(v);
}
__device__ inline void store(bool take, uint8_t* p, uint8_t v) {
  asm volatile("{ .reg .pred q; setp.ne.u32 q, %0, 0; @q st.global.u8 [%1], %2; }"
               ::"r"(uint32_t(take)), "l"(p), "h"(uint16_t(v)) : "memory");
}

__device__ inline uint4 load(bool take, const uint4* p) {
  uint4 v{};
  asm volatile("{ .reg .pred q; setp.ne.u32 q, %5, 0; @q ld.global.v4.u32 {%0, %1, %2, %3}, [%4]; }"
               : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w) : "l"(p), "r"(uint32_t(take)));
  return v;
}
__device__ inline void store(bool take, uint4* p, uint4 v) {
  asm volatile("{ .reg .pred q; setp.ne.u32 q, %0, 0; @q st.global.v4.u32 [%1], {%2, %3, %4, %5}; }"
               ::"r"(uint32_t(take)), "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

template <size_t kUnit>
__device__ inline uint4 load_chunk(const char* buf, uint32_t chunk, uint32_t bytes, bool vec_ok) {
  const uint32_t off = chunk * uint32_t(kChunkBytes);
  const bool whole = vec_ok && off + uint32_t(kChunkBytes) <= bytes;
  const uint4 vector = load(whole, reinterpret_cast<const uint4*>(buf + off));
  using W = typename UnitWord<kUnit>::type;
  W words[kChunkBytes / kUnit];
#pragma unroll
  for (uint32_t k = 0; k < kChunkBytes / kUnit; ++k)
    words[k] = load(!whole && off + uint32_t((k + 1) * kUnit) <= bytes, reinterpret_cast<const W*>(buf + off) + k);
  uint4 v;
  __builtin_memcpy(&v, words, sizeof(v));
  return whole ? vector : v;
}

template <size_t kUnit>
__device__ inline void store_chunk(char* buf, uint32_t chunk, uint32_t bytes, bool vec_ok, uint4 v) {
  const uint32_t off = chunk * uint32_t(kChunkBytes);
  const bool whole = vec_ok && off + uint32_t(kChunkBytes) <= bytes;
  store(whole, reinterpret_cast<uint4*>(buf + off), v);
  using W = typename UnitWord<kUnit>::type;
  W words[kChunkBytes / kUnit];
  __builtin_memcpy(words, &v, sizeof(v));
#pragma unroll
  for (uint32_t k = 0; k < kChunkBytes / kUnit; ++k)
    store(!whole && off + uint32_t((k + 1) * kUnit) <= bytes, reinterpret_cast<W*>(buf + off) + k, words[k]);
}

}  // namespace predicated

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
