// panel_factors_kernels.cuh's second-pass launch for complex128, in a file of its own: at 1024 threads a
// block (64 registers a thread) its second-pass kernel spills 64 bytes, which is measured (the
// 32 × 32 grid with a larger spill was still faster than the 16 × 16 one, which does not spill:
// docs/PERFORMANCE.md#solver-panel-owner-grid), so ptxas's warnings are off for this file alone
// (CMakeLists.txt); every other file keeps spills an error.
#include "panel_factors_kernels.cuh"

namespace solvers {

template void launch_owned_factors<Complex<double>>(const PanelFactorsArgs&, real_t<Complex<double>>, int,
                                                    cudaStream_t);

}  // namespace solvers
