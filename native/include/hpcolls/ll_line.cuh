// The LL ("low latency") line: one 16-byte store carries 8 payload bytes and the call's epoch
// twice, laid out {data0, epoch, data1, epoch}
// (as two little-endian 64-bit elements, epoch in each high word). A receiver polls its own scratch until both flag
// words equal the epoch: each 8-byte half is written atomically, so both flags matching means
// both data words are this call's. No separate flag write, no barrier. Flags are not values,
// so any bit pattern (NaN, Inf, -0.0) is a legal payload.
//
// LLLine is a line where it lives (scratch is an array of them: line arithmetic is pointer
// arithmetic on LLLine*); LLPacket<kMode> is a line as written or read, with the store and load
// of LL mode kMode; a 16-byte payload chunk travels as two packets (CallState::send_chunk,
// LLPacket::chunk_of). The forms below compile to the same machine code as the bare uint4 lines
// they replaced (docs/PERFORMANCE.md has the check); a struct of two uint64_t, or a member-only
// holds(), did not (other register allocation and predicate forms in the small one-shot kernel).
#pragma once
#include <cstdint>

#include "hpcolls/types.h"

namespace hpcolls {

struct LLLine {
  uint4 raw;  // {data0, flag, data1, flag}: two little-endian {flag:data} 64-bit words
};
static_assert(sizeof(LLLine) == 16, "an LL line is one 16-byte store");

// How lines are written and polled (DevComm::ll_mode; HPCOLLS_LL_MODE, for diagnosis):
//   0: one volatile 16-byte vector store / load of two 64-bit {flag:data} elements
//   1: two scalar 64-bit relaxed.sys stores / loads
//   2: as 1, plus fence.proxy.alias after a line is seen complete (orders accesses made
//      through different virtual aliases of the same memory, as on one GPU across processes)
//   3: as 1 with acquire.sys loads and release.sys stores, plus fence.proxy.alias
// The mode is a template parameter: a kernel is instantiated once per mode and the launcher picks
// one, so the poll loop carries no per-load branch (a run-time switch there compiled to a jump
// table walked on every poll). The default build has mode 0 only (diagnostics.h).
template <int kMode>
struct LLPacket {
  static_assert(kMode >= 0 && kMode < kLLModes, "unknown LL mode");

  ulonglong2 words;  // the line's two {flag:data} words, as read

  // Stores data0, data1 with `flag` into the line at dst, as one packet.
  __device__ static void write(LLLine* dst, uint32_t d0, uint32_t d1, uint32_t flag) {
    const uint64_t lo = (uint64_t(flag) << 32) | d0, hi = (uint64_t(flag) << 32) | d1;
    uint64_t* p = reinterpret_cast<uint64_t*>(dst);
    if constexpr (kMode == 0) {
      asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(lo), "l"(hi) : "memory");
    } else if constexpr (kMode == 3) {
      asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(lo) : "memory");
      asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p + 1), "l"(hi) : "memory");
    } else {
      asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(lo) : "memory");
      asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p + 1), "l"(hi) : "memory");
    }
  }

  // One load of the line at src, its two words as they are now.
  __device__ static LLPacket read(const LLLine* src) {
    LLPacket pk;
    const uint64_t* p = reinterpret_cast<const uint64_t*>(src);
    if constexpr (kMode == 0) {
      asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(pk.words.x), "=l"(pk.words.y) : "l"(p) : "memory");
    } else if constexpr (kMode == 3) {
      asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(pk.words.x) : "l"(p) : "memory");
      asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(pk.words.y) : "l"(p + 1) : "memory");
    } else {
      asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(pk.words.x) : "l"(p) : "memory");
      asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(pk.words.y) : "l"(p + 1) : "memory");
    }
    return pk;
  }

  // True when both words carry `flag`: the packet is this epoch's data.
  __device__ bool holds(uint32_t flag) const { return holds(words, flag); }
  __device__ static bool holds(ulonglong2 w, uint32_t flag) {
    return uint32_t(w.x >> 32) == flag && uint32_t(w.y >> 32) == flag;
  }

  // The payload of a chunk's two packets, its first 8 bytes and its last 8.
  __device__ static uint4 chunk_of(LLPacket lo, LLPacket hi) {
    return make_uint4(uint32_t(lo.words.x), uint32_t(lo.words.y), uint32_t(hi.words.x), uint32_t(hi.words.y));
  }

  // Called once the awaited packets hold this epoch's flag: modes 2 and 3 then order what
  // follows after the loads through every alias of the memory.
  __device__ static void after_complete() {
    if constexpr (kMode >= 2) asm volatile("fence.proxy.alias;" ::: "memory");
  }
};

}  // namespace hpcolls
