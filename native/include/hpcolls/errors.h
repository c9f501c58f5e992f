// Host-side error types. The bindings turn each into a Python exception class of the same name
// (hpcolls.errors re-exports them), so callers can tell "no GPU" from "a peer timed out".
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace hpcolls {

struct NoDeviceError : std::runtime_error { using std::runtime_error::runtime_error; };
struct CudaError : std::runtime_error { using std::runtime_error::runtime_error; };
struct CollectiveTimeout : std::runtime_error { using std::runtime_error::runtime_error; };
struct CommunicatorBroken : std::runtime_error { using std::runtime_error::runtime_error; };

// Throws CudaError naming the call that failed; used for every CUDA runtime call we make.
inline void cuda_check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  (void)cudaGetLastError();  // clear the sticky-free error so later calls are not blamed
  throw CudaError(std::string("hpcolls: ") + what + " failed: " + cudaGetErrorName(err) + " (" +
                  cudaGetErrorString(err) + ")");
}

}  // namespace hpcolls
