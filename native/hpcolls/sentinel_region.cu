// Arms a new sentinel region: every payload word of both halves set to kSentinel
// (sentinel_region.h). Once armed, the region stays armed between calls: every call's consumer
// writes the sentinel back into each payload word it consumed (sentinel.cuh).
#include "hpcolls/sentinel_layout.h"
#include "hpcolls/sentinel_region.h"

namespace hpcolls {

namespace {
__global__ void fill_words(uint64_t* words, uint64_t count, uint64_t value) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count; i += uint64_t(gridDim.x) * blockDim.x)
    words[i] = value;
}
}  // namespace

cudaError_t arm_sentinel_region(void* base, size_t half_bytes) {
  const uint32_t chunks = sentinel_chunks(half_bytes);
  if (chunks == 0) return cudaSuccess;
  for (int half = 0; half < 2; ++half) {
    char* payload = static_cast<char*>(base) + size_t(half) * half_bytes + sentinel_payload_offset(chunks);
    fill_words<<<256, 256>>>(reinterpret_cast<uint64_t*>(payload), uint64_t(chunks) * 2, kSentinel);
    if (const cudaError_t e = cudaGetLastError()) return e;
  }
  return cudaSuccess;
}

}  // namespace hpcolls
