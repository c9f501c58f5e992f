// The LL ("low latency") line: one 16-byte store carries 8 payload bytes and the call's epoch
// twice, laid out {data0, epoch, data1, epoch}
// (as two little-endian 64-bit elements, epoch in each high word). A receiver polls its own scratch until both flag
// words equal the epoch: each 8-byte half is written atomically, so both flags matching means
// both data words are this call's. No separate flag write, no barrier. Flags are not values,
// so any bit pattern (NaN, Inf, -0.0) is a legal payload.
#pragma once
#include <cstdint>

namespace hpcolls {

struct LLLine {
  // One vector store of two 64-bit elements {flag:data0, flag:data1}. PTX promises single-copy
  // atomicity per element, not per vector, so each data word shares its 64-bit element with a
  // flag: a reader that sees both flags has seen both data words of this epoch.
  __device__ static void store(uint4* dst, uint32_t d0, uint32_t d1, uint32_t flag) {
    const uint64_t lo = (uint64_t(flag) << 32) | d0, hi = (uint64_t(flag) << 32) | d1;
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(dst), "l"(lo), "l"(hi) : "memory");
  }

  // One volatile read; true when the line holds this epoch's data, returned in `out`.
  __device__ static bool try_read(const uint4* src, uint32_t flag, uint2& out) {
    uint64_t lo, hi;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(src) : "memory");
    out = make_uint2(uint32_t(lo), uint32_t(hi));
    return uint32_t(lo >> 32) == flag && uint32_t(hi >> 32) == flag;
  }
};

// A 16-byte payload chunk travels as two LL lines.
__device__ inline void ll_store_chunk(uint4* dst, uint4 v, uint32_t flag) {
  LLLine::store(dst, v.x, v.y, flag);
  LLLine::store(dst + 1, v.z, v.w, flag);
}

}  // namespace hpcolls
