// Wall-clock deadline for bounded polling: %globaltimer counts nanoseconds on every SM alike.
#pragma once
#include <cstdint>

namespace hpcolls {

__device__ inline uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace hpcolls
