// Arming a sentinel region at allocation (host entry; the kernel is in sentinel_region.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace hpcolls {

// Fills the payload area of both halves of the region at `base` (each `half_bytes`, its layout in
// sentinel_layout.h) with kSentinel, on the legacy default stream; the rest stays as allocated
// (zero). The caller synchronizes before the region is exported.
cudaError_t arm_sentinel_region(void* base, size_t half_bytes);

}  // namespace hpcolls
