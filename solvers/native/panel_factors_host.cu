// panel_factors.h on the host: the step code (panel_factors_step.cuh) with one thread.
#include <type_traits>

#include "panel_factors_step.cuh"

namespace solvers {
namespace {

struct OneThread {
  int first() const { return 0; }
  int stride() const { return 1; }
  void sync() const {}
};

}  // namespace

void panel_factors_host(ScalarType t, const PanelFactorsArgs& args, double orthogonality_limit) {
  check_panel_factors_args(args);
  with_scalar(t, "panel_factors", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    panel_factors::run<T>(OneThread{}, args, static_cast<T*>(args.scratch), real_t<T>(orthogonality_limit));
  });
}

}  // namespace solvers
