// What the diagnostics of native/solvers/bench share: a failed CUDA call ends the program saying
// which, and the first GPU's properties, or SKIP printed where there is no GPU.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace solvers_bench {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// GPU 0's properties into `prop`; false (having printed SKIP) where there is no GPU.
inline bool first_gpu(cudaDeviceProp& prop) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device here\n");
    return false;
  }
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  return true;
}

}  // namespace solvers_bench
