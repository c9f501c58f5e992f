// panel_factors.h on the GPU: the step code (panel_factors_step.cuh) in one thread block, its
// workspace (two w × w matrices and D) in shared memory where it fits (w = 64: 64 KB in float64,
// 128 KB in complex128), else in the caller's scratch. Each of the ~800 phases reads what other
// threads wrote just before: from global memory every phase waited for an L2 round trip (620 us
// a panel on an H100), which shared memory avoids.
#include <type_traits>

#include "cuda_check.h"
#include "panel_factors_step.cuh"

namespace solvers {

namespace {

constexpr int kThreads = 256;

struct Block {
  __device__ int first() const { return threadIdx.x; }
  __device__ int stride() const { return blockDim.x; }
  __device__ void sync() const { __syncthreads(); }
};

template <typename T>
__global__ void __launch_bounds__(kThreads, 1) panel_factors_kernel(PanelFactorsArgs args, real_t<T> limit,
                                                                     bool shared) {
  extern __shared__ __align__(16) unsigned char workspace[];
  T* work = shared ? reinterpret_cast<T*>(workspace) : static_cast<T*>(args.scratch);
  panel_factors::run<T>(Block{}, args, work, limit);
}

// The shared memory the workspace needs, or 0 where it does not fit (the kernel then takes the
// scratch); the kernel's limit raised past the default 48 KB (asked at each launch: two cheap
// runtime calls beside a panel's other launches).
template <typename T>
size_t shared_bytes(int w, int device) {
  const size_t bytes = size_t(panel_factors_scratch_elems(w)) * sizeof(T);
  int limit = 0;
  cuda_check(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
             "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
  if (bytes > size_t(limit)) return 0;
  cuda_check(cudaFuncSetAttribute(panel_factors_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
             "cudaFuncSetAttribute(panel_factors_kernel)");
  return bytes;
}

}  // namespace

void panel_factors_device(ScalarType t, const PanelFactorsArgs& args, double orthogonality_limit, int device,
                          cudaStream_t stream) {
  check_panel_factors_args(args);
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  with_scalar(t, "panel_factors", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const size_t bytes = shared_bytes<T>(args.w, device);
    panel_factors_kernel<T><<<1, kThreads, bytes, stream>>>(args, real_t<T>(orthogonality_limit), bytes > 0);
  });
  cuda_check(cudaGetLastError(), "panel_factors_kernel launch");
}

}  // namespace solvers
