// panel_factors.h and panel_cholqr2.h's first pass on the GPU, one thread block each
// (panel_factors_kernels.cuh); complex128's second-pass launch is built in
// panel_factors_device_complex128.cu.
#include "panel_factors_kernels.cuh"

namespace solvers {

extern template void launch_owned_factors<Complex<double>>(const PanelFactorsArgs&, real_t<Complex<double>>, int,
                                                           cudaStream_t);

void panel_factors_device(ScalarType t, const PanelFactorsArgs& args, double orthogonality_limit, int device,
                          cudaStream_t stream) {
  check_panel_factors_args(args);
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  with_scalar(t, "panel_factors", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch_owned_factors<T>(args, real_t<T>(orthogonality_limit), device, stream);
  });
}

void panel_first_factor_device(ScalarType t, const FirstFactorArgs& args, int device, cudaStream_t stream) {
  check_first_factor_width(args.w);
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  with_scalar(t, "panel_first_factor", [&](auto* tag) {
    launch_first_factor<std::remove_pointer_t<decltype(tag)>>(args, device, stream);
  });
}

#define SOLVERS_PANEL_LAUNCHES(T)                                                                          \
  template void launch_owned_factors<T>(const PanelFactorsArgs&, real_t<T>, int, cudaStream_t);            \
  template void launch_first_factor<T>(const FirstFactorArgs&, int, cudaStream_t);
SOLVERS_PANEL_LAUNCHES(float)
SOLVERS_PANEL_LAUNCHES(double)
SOLVERS_PANEL_LAUNCHES(Complex<float>)
#undef SOLVERS_PANEL_LAUNCHES
template void launch_first_factor<Complex<double>>(const FirstFactorArgs&, int, cudaStream_t);

}  // namespace solvers
