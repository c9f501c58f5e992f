// panel_factors.h on the GPU: the step code (panel_factors_step.cuh) in one thread block,
// its w × w matrices in global memory (they stay in L1/L2 at w = 64).
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
__global__ void __launch_bounds__(kThreads, 1) panel_factors_kernel(PanelFactorsArgs args, real_t<T> limit) {
  panel_factors::run<T>(Block{}, args, limit);
}

}  // namespace

void panel_factors_device(ScalarType t, const PanelFactorsArgs& args, double orthogonality_limit, int device,
                          cudaStream_t stream) {
  check_panel_factors_args(args);
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  with_scalar(t, "panel_factors", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    panel_factors_kernel<T><<<1, kThreads, 0, stream>>>(args, real_t<T>(orthogonality_limit));
  });
  cuda_check(cudaGetLastError(), "panel_factors_kernel launch");
}

}  // namespace solvers
