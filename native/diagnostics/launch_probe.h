// Baselines for host-overhead measurements: one empty kernel launch, bare or with the AllReduce
// kernels' parameters, by <<<>>> or by cudaLaunchKernelEx; and one launched with dependent launch,
// the floor of the device-time benchmark's graphs (launch_probe.cu).
#pragma once
#include <cstdint>

namespace hpcolls {

void launch_noop(uintptr_t stream);
void launch_noop_with_allreduce_args(uintptr_t stream, bool launch_kernel_ex);
// False, launching nothing, where the device has no dependent launch (before compute capability 9.0).
bool launch_noop_dependent(uintptr_t stream);

}  // namespace hpcolls
