// Host-side checks of the solver's kernels: a failed CUDA call becomes a CudaError naming it.
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace solvers {

struct CudaError : std::runtime_error { using std::runtime_error::runtime_error; };

inline void cuda_check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a non-sticky error so that later calls are not blamed
  throw CudaError(std::string("solvers: ") + what + " failed: " + cudaGetErrorName(err) + " (" +
                  cudaGetErrorString(err) + ")");
}

}  // namespace solvers
