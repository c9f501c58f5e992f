#include "hpcolls/runtime_info.h"

#include <cuda_runtime.h>

#include <cstdio>

#include "hpcolls/errors.h"

namespace hpcolls {

namespace {
// A build for a machine without a GPU (HPCOLLS_CUDA_ARCHITECTURES=no-gpu, CMakeLists.txt) holds
// unoptimized PTX only: it counts no device even where there are some, and says why.
#ifdef HPCOLLS_NO_GPU_CODE
constexpr bool kGpuCode = false;
#else
constexpr bool kGpuCode = true;
#endif
constexpr const char* kNoGpuCodeReason =
    "no usable CUDA device: this build of hpcolls has no GPU code (HPCOLLS_CUDA_ARCHITECTURES=no-gpu, "
    "jobs/local/setup.sh's choice on a machine without a GPU); rebuild it here (source jobs/local/setup.sh)";

cudaError_t count_devices(int* n) {
  *n = 0;
  const cudaError_t err = cudaGetDeviceCount(n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    *n = 0;
  }
  return err;
}
}  // namespace

int device_count() {
  int n;
  count_devices(&n);
  return kGpuCode ? n : 0;
}

std::string no_device_reason() {
  int n;
  const cudaError_t err = count_devices(&n);
  if (err == cudaSuccess && n > 0) return kGpuCode ? "" : kNoGpuCodeReason;
  if (err == cudaSuccess || err == cudaErrorNoDevice) return "no CUDA device visible (check CUDA_VISIBLE_DEVICES and the job's GPU request)";
  if (err == cudaErrorInsufficientDriver) return "no CUDA device visible: no NVIDIA driver found, or one older than the CUDA runtime hpcolls was built with";
  return std::string("no CUDA device visible: cudaGetDeviceCount failed with ") + cudaGetErrorName(err);
}

void require_device() {
  const std::string why = no_device_reason();
  if (!why.empty()) throw NoDeviceError("hpcolls: " + why);
}

int runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) (void)cudaGetLastError();
  return v;
}

int driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess) (void)cudaGetLastError();
  return v;
}

DeviceInfo device_info(int device) {
  require_device();
  cudaDeviceProp p{};
  cuda_check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  char bus[32] = {0};
  cuda_check(cudaDeviceGetPCIBusId(bus, sizeof(bus), device), "cudaDeviceGetPCIBusId");
  char uuid[40];
  const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  std::snprintf(uuid, sizeof(uuid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  return DeviceInfo{device, p.name, bus, uuid, p.multiProcessorCount, p.totalGlobalMem, p.major, p.minor};
}

}  // namespace hpcolls
