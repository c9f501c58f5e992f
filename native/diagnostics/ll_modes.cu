// The AllReduce kernels built for the diagnostic LL modes 1..3 (ll_line.cuh), lent to the default
// module through DiagnosticLaunchers (diagnostics.h). The small-message one-shot kernel has mode 0
// only: a communicator in another mode runs the general one (NativeComm::small_kernel).
#include <type_traits>

#include "hpcolls/allreduce/oneshot.cuh"
#include "hpcolls/allreduce/twoshot.cuh"
#include "hpcolls/diagnostics.h"
#include "ll_modes.h"

namespace hpcolls::diagnostics {
namespace {

// launch(std::integral_constant<int, M>{}) for the communicator's LL mode M.
template <typename F>
cudaError_t for_ll_mode(int mode, F&& launch) {
  switch (mode) {
    case 1: return launch(std::integral_constant<int, 1>{});
    case 2: return launch(std::integral_constant<int, 2>{});
    case 3: return launch(std::integral_constant<int, 3>{});
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t oneshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return for_ll_mode(c.ll_mode, [&](auto mode) { return kernels::launch_oneshot<decltype(mode)::value>(c, t, op, a); });
}

cudaError_t twoshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return for_ll_mode(c.ll_mode, [&](auto mode) { return kernels::launch_twoshot<decltype(mode)::value>(c, t, op, a); });
}

const DiagnosticLaunchers kLaunchers{kDiagnosticsVersion, sizeof(DevComm), sizeof(CollectiveArgs), &oneshot, &twoshot};

}  // namespace

const DiagnosticLaunchers* ll_mode_launchers() { return &kLaunchers; }

}  // namespace hpcolls::diagnostics
