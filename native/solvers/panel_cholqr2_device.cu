// panel_cholqr2.h on the GPU: panel_cholqr2_step.cuh's passes as kernels on the caller's
// stream: a tall pass is one block a chunk of 64 rows (at most kPanelTallBlocks blocks where it
// leaves partial sums), the reduction one thread per entry and group of blocks, the w × w parts
// one block (panel_factors_device.cu).
#include <type_traits>

#include "cuda_check.h"
#include "ordered_sum.cuh"
#include "panel_cholqr2_step.cuh"
#include "panel_factors_device.cuh"

namespace solvers {

namespace {

using namespace owner_grid;
using panel_cholqr2::kReduceGroups;
using panel_cholqr2::kTallSharedElems;
using panel_cholqr2::Tall;

template <typename T>
__global__ void __launch_bounds__(kThreads, 1) tall_kernel(Tall<T> p) {
  extern __shared__ __align__(16) unsigned char shared[];
  panel_cholqr2::tall_block<T>(BlockGrid{}, p, blockIdx.x, gridDim.x, reinterpret_cast<T*>(shared));
}

constexpr int kReduceCols = 32;   // entries a block

template <typename T>
__global__ void __launch_bounds__(kReduceCols * kReduceGroups) reduce_kernel(const T* partials, int count, T* out,
                                                                            int w) {
  __shared__ T sums[kReduceGroups][kReduceCols];
  const int col = threadIdx.x % kReduceCols, group = threadIdx.x / kReduceCols;
  const int entry = blockIdx.x * kReduceCols + col;
  sums[group][col] = panel_cholqr2::group_sum(partials, count, entry, group);
  __syncthreads();
  const int i = entry / kN, j = entry % kN;
  if (group == 0 && i < w && j < w) out[i * w + j] = sum_rows_in_order(sums, col);
}

template <typename T>
struct DeviceRunner {
  int device;
  cudaStream_t stream;

  void tall(const Tall<T>& p, int blocks) {
    const size_t bytes = size_t(kTallSharedElems) * sizeof(T);
    allow_shared(tall_kernel<T>, bytes, device, "panel tall_kernel");
    tall_kernel<T><<<blocks, kThreads, bytes, stream>>>(p);
    cuda_check(cudaGetLastError(), "panel tall_kernel launch");
  }
  void reduce(const T* partials, int count, T* out, int w) {
    reduce_kernel<T><<<kN * kN / kReduceCols, kReduceCols * kReduceGroups, 0, stream>>>(partials, count, out, w);
    cuda_check(cudaGetLastError(), "panel reduce_kernel launch");
  }
  void first_factor(const FirstFactorArgs& args) { launch_first_factor<T>(args, device, stream); }
  void factors(const PanelFactorsArgs& args, real_t<T> limit) { launch_owned_factors<T>(args, limit, device, stream); }
};

}  // namespace

void panel_cholqr2_device(ScalarType t, const PanelCholqr2Args& args, double orthogonality_limit, int device,
                          cudaStream_t stream) {
  panel_cholqr2::check_panel_cholqr2_args(args);
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  with_scalar(t, "panel_cholqr2", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    DeviceRunner<T> run{device, stream};
    panel_cholqr2::steps<T>(args, real_t<T>(orthogonality_limit), run);
  });
}

}  // namespace solvers
