// The LL ("low latency") line: one 16-byte store carries 8 payload bytes and the call's epoch
// twice, laid out {data0, epoch, data1, epoch}
// (as two little-endian 64-bit elements, epoch in each high word). A receiver polls its own scratch until both flag
// words equal the epoch: each 8-byte half is written atomically, so both flags matching means
// both data words are this call's. No separate flag write, no barrier. Flags are not values,
// so any bit pattern (NaN, Inf, -0.0) is a legal payload.
#pragma once
#include <cstdint>

namespace hpcolls {

// How lines are written and polled (DevComm::ll_mode; HPCOLLS_LL_MODE, for diagnosis):
//   0: one volatile 16-byte vector store / load of two 64-bit {flag:data} elements
//   1: two scalar 64-bit relaxed.sys stores / loads
//   2: as 1, plus fence.proxy.alias after a line is seen complete (orders accesses made
//      through different virtual aliases of the same memory, as on one GPU across processes)
//   3: as 1 with acquire.sys loads and release.sys stores, plus fence.proxy.alias
struct LLLine {
  __device__ static void store(uint4* dst, uint32_t d0, uint32_t d1, uint32_t flag, int mode) {
    const uint64_t lo = (uint64_t(flag) << 32) | d0, hi = (uint64_t(flag) << 32) | d1;
    uint64_t* p = reinterpret_cast<uint64_t*>(dst);
    if (mode == 0) {
      asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(lo), "l"(hi) : "memory");
    } else if (mode == 3) {
      asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(lo) : "memory");
      asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p + 1), "l"(hi) : "memory");
    } else {
      asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(lo) : "memory");
      asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p + 1), "l"(hi) : "memory");
    }
  }

  // One poll; true when the line holds this epoch's data, returned in `out`.
  __device__ static bool try_read(const uint4* src, uint32_t flag, uint2& out, int mode) {
    uint64_t lo, hi;
    const uint64_t* p = reinterpret_cast<const uint64_t*>(src);
    if (mode == 0) {
      asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(p) : "memory");
    } else if (mode == 3) {
      asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(lo) : "l"(p) : "memory");
      asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(hi) : "l"(p + 1) : "memory");
    } else {
      asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(lo) : "l"(p) : "memory");
      asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(hi) : "l"(p + 1) : "memory");
    }
    out = make_uint2(uint32_t(lo), uint32_t(hi));
    const bool ok = uint32_t(lo >> 32) == flag && uint32_t(hi >> 32) == flag;
    if (ok && mode >= 2) asm volatile("fence.proxy.alias;" ::: "memory");
    return ok;
  }
};

// A 16-byte payload chunk travels as two LL lines.
__device__ inline void ll_store_chunk(uint4* dst, uint4 v, uint32_t flag, int mode) {
  LLLine::store(dst, v.x, v.y, flag, mode);
  LLLine::store(dst + 1, v.z, v.w, flag, mode);
}

}  // namespace hpcolls
