// Baseline for host-overhead measurements: one empty kernel launch (launch_probe.cu).
#pragma once
#include <cstdint>

namespace hpcolls {

void launch_noop(uintptr_t stream);

}  // namespace hpcolls
