// An empty kernel launched from Python in one native call: the benchmark's baseline for host
// overhead (DESIGN.md counts a collective's host cost above a bare launch measured in the same
// run, since a launch alone costs several microseconds on a virtualized GPU machine).
#include <cuda_runtime.h>

#include "hpcolls/errors.h"
#include "hpcolls/launch_probe.h"
#include "hpcolls/runtime_info.h"

namespace hpcolls {
namespace {
__global__ void noop() {}
}  // namespace

void launch_noop(uintptr_t stream) {
  noop<<<1, 32, 0, reinterpret_cast<cudaStream_t>(stream)>>>();
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    require_device();  // "no GPU" as NoDeviceError; asked only on failure, off the timed path
    cuda_check(err, "launch(noop)");
  }
}

}  // namespace hpcolls
