// An empty kernel launched from Python in one native call: the benchmark's baseline for host
// overhead (docs/ARCHITECTURE.md#targets-and-floors counts a collective's host cost above a bare
// launch measured in the same run, since a launch alone costs several microseconds on a
// virtualized GPU machine).
#include <cuda_runtime.h>

#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/errors.h"
#include "launch_probe.h"
#include "hpcolls/runtime_info.h"
#include "hpcolls/types.h"

namespace hpcolls {
namespace {
__global__ void noop() {}
// The AllReduce kernels' parameter list (dispatch.cuh), unused: what a launch costs for copying
// them, apart from anything hpcolls does around its launch.
__global__ void noop_with_allreduce_args(DevComm, const char*, char*, uint32_t, bool) {}
// An empty kernel that waits for the one before and lets the next start early, as a collective
// kernel launched with dependent launch does (dependent_launch.cuh): in a graph of such kernels,
// what a chain of them costs per kernel with nothing to do — the floor under a small call's
// device time with dependent launch on.
__global__ void noop_dependent() {
  wait_for_previous_kernel();
  allow_next_kernel_to_launch();
}

void check_launch(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    require_device();  // "no GPU" as NoDeviceError; asked only on failure, off the timed path
    cuda_check(err, what);
  }
}
}  // namespace

void launch_noop(uintptr_t stream) {
  noop<<<1, 32, 0, reinterpret_cast<cudaStream_t>(stream)>>>();
  check_launch("launch(noop)");
}

bool launch_noop_dependent(uintptr_t stream) {
  require_device();  // off any timed path: this kernel is only ever replayed from a graph
  int device = 0, major = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  if (major < 9) return false;  // no dependent launch before compute capability 9.0 (NativeComm)
  cudaLaunchAttribute dependent = dependent_launch_attribute();
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(32);
  cfg.stream = reinterpret_cast<cudaStream_t>(stream);
  cfg.attrs = &dependent;
  cfg.numAttrs = 1;
  (void)cudaLaunchKernelEx(&cfg, noop_dependent);
  check_launch("launch(noop, dependent launch)");
  return true;
}

void launch_noop_with_allreduce_args(uintptr_t stream, bool launch_kernel_ex) {
  const DevComm c{};
  const auto s = reinterpret_cast<cudaStream_t>(stream);
  if (launch_kernel_ex) {
    // The way the AllReduce kernels are launched (dispatch.cuh), with no attribute: beside the
    // <<<>>> launch below, what cudaLaunchKernelEx itself costs.
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(32);
    cfg.stream = s;
    (void)cudaLaunchKernelEx(&cfg, noop_with_allreduce_args, c, static_cast<const char*>(nullptr),
                             static_cast<char*>(nullptr), uint32_t(0), false);
  } else {
    noop_with_allreduce_args<<<1, 32, 0, s>>>(c, nullptr, nullptr, 0, false);
  }
  check_launch("launch(noop with AllReduce arguments)");
}

}  // namespace hpcolls
