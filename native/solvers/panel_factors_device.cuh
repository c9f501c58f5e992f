// The launches of panel_factors_device.cu for the other panel kernels' file (panel_cholqr2's
// entry queues them between its tall products), and the shared-memory limit they raise.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "cuda_check.h"
#include "panel_cholqr2.h"
#include "scalar.cuh"

namespace solvers {

// Whether `bytes` of shared memory fit one block of `device` (its opt-in limit).
inline bool shared_fits(size_t bytes, int device) {
  int limit = 0;
  cuda_check(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
             "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
  return bytes <= size_t(limit);
}

// A kernel's limit raised past the default 48 KB to `bytes` (asked at each launch: cheap runtime
// calls beside a panel's other launches), or an error where the device has less.
template <typename Kernel>
void allow_shared(Kernel* kernel, size_t bytes, int device, const char* name) {
  if (!shared_fits(bytes, device))
    throw CudaError(std::string("solvers: ") + name + " needs " + std::to_string(bytes) +
                    " bytes of shared memory a block, more than this GPU gives");
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
             (std::string("cudaFuncSetAttribute(") + name + ")").c_str());
}

template <typename T>
void launch_owned_factors(const PanelFactorsArgs& args, real_t<T> limit, int device, cudaStream_t stream);
template <typename T>
void launch_first_factor(const FirstFactorArgs& args, int device, cudaStream_t stream);

}  // namespace solvers
