// panel_factors.h and panel_cholqr2.h's first pass on the host: the step code with one thread
// (panel_factors_step.cuh), or the owner grid's threads one after the other (w <= 64:
// panel_factors_owned.cuh).
#include <type_traits>
#include <vector>

#include "panel_factors_owned.cuh"

namespace solvers {
namespace {

struct OneThread {
  int first() const { return 0; }
  int stride() const { return 1; }
  void sync() const {}
};

template <typename T>
std::vector<T> owned_workspace() {
  return std::vector<T>(panel_factors::owned::kWorkspaceElems);
}

}  // namespace

void panel_factors_host(ScalarType t, const PanelFactorsArgs& args, double orthogonality_limit) {
  check_panel_factors_args(args);
  with_scalar(t, "panel_factors", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const real_t<T> limit(orthogonality_limit);
    if (args.w <= owner_grid::kN) {
      std::vector<T> work = owned_workspace<T>();
      panel_factors::owned::run<T>(owner_grid::HostGrid{}, args, work.data(), limit);
    } else {
      panel_factors::run<T>(OneThread{}, args, static_cast<T*>(args.scratch), limit);
    }
  });
}

void panel_first_factor_host(ScalarType t, const FirstFactorArgs& args) {
  check_first_factor_width(args.w);
  with_scalar(t, "panel_first_factor", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    std::vector<T> work = owned_workspace<T>();
    panel_factors::owned::first_factor<T>(owner_grid::HostGrid{}, args, work.data());
  });
}

}  // namespace solvers
