// The kernels of panel_factors.h and panel_cholqr2.h's first pass, and their launches, for the
// files that instantiate them (panel_factors_device.cu; panel_factors_device_complex128.cu).
//
// w <= 64: the owner grid (panel_factors_owned.cuh), 1024 threads holding the matrices being
// factored in registers, one barrier a column; its three 64 × 65 operands in shared memory.
//
// Wider: the flat step code (panel_factors_step.cuh), its workspace (two w × w matrices and D)
// in shared memory where it fits, else in the caller's scratch. Each of its ~800 phases reads
// what other threads wrote just before: from global memory every phase waited for an L2 round
// trip, which shared memory avoids.
#pragma once
#include <type_traits>

#include "cuda_check.h"
#include "panel_factors_device.cuh"
#include "panel_factors_owned.cuh"

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

template <typename T>
__global__ void __launch_bounds__(owner_grid::kThreads, 1) owned_factors_kernel(PanelFactorsArgs args,
                                                                                 real_t<T> limit) {
  extern __shared__ __align__(16) unsigned char workspace[];
  panel_factors::owned::run<T>(owner_grid::BlockGrid{}, args, reinterpret_cast<T*>(workspace), limit);
}

template <typename T>
__global__ void __launch_bounds__(owner_grid::kThreads, 1) first_factor_kernel(FirstFactorArgs args) {
  extern __shared__ __align__(16) unsigned char workspace[];
  panel_factors::owned::first_factor<T>(owner_grid::BlockGrid{}, args, reinterpret_cast<T*>(workspace));
}

template <typename T>
size_t owned_bytes() {
  return size_t(panel_factors::owned::kWorkspaceElems) * sizeof(T);
}

}  // namespace

template <typename T>
void launch_owned_factors(const PanelFactorsArgs& args, real_t<T> limit, int device, cudaStream_t stream) {
  if (args.w <= owner_grid::kN) {
    const size_t bytes = owned_bytes<T>();
    allow_shared(owned_factors_kernel<T>, bytes, device, "owned_factors_kernel");
    owned_factors_kernel<T><<<1, owner_grid::kThreads, bytes, stream>>>(args, limit);
  } else {
    const size_t wanted = size_t(panel_factors_scratch_elems(args.w)) * sizeof(T);
    const size_t bytes = shared_fits(wanted, device) ? wanted : 0;
    if (bytes > 0) allow_shared(panel_factors_kernel<T>, bytes, device, "panel_factors_kernel");
    panel_factors_kernel<T><<<1, kThreads, bytes, stream>>>(args, limit, bytes > 0);
  }
  cuda_check(cudaGetLastError(), "panel_factors kernel launch");
}

template <typename T>
void launch_first_factor(const FirstFactorArgs& args, int device, cudaStream_t stream) {
  const size_t bytes = owned_bytes<T>();
  allow_shared(first_factor_kernel<T>, bytes, device, "first_factor_kernel");
  first_factor_kernel<T><<<1, owner_grid::kThreads, bytes, stream>>>(args);
  cuda_check(cudaGetLastError(), "first_factor_kernel launch");
}

}  // namespace solvers
