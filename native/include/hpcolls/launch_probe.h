// Baselines for host-overhead measurements: one empty kernel launch, bare or with the AllReduce
// kernels' parameters, by <<<>>> or by cudaLaunchKernelEx (launch_probe.cu).
#pragma once
#include <cstdint>

namespace hpcolls {

void launch_noop(uintptr_t stream);
void launch_noop_with_allreduce_args(uintptr_t stream, bool launch_kernel_ex);

}  // namespace hpcolls
