// panel_cholqr2.h on the host: panel_cholqr2_step.cuh's passes with the owner grid's threads one
// after the other (owner_grid.cuh's HostGrid), the blocks of a tall pass and the reduction's
// groups in turn. Slow (plain loops for the tall products); it is what the CPU tests check the
// GPU's steps by, not the host's panel QR (solvers/panel_qr.py: BLAS there).
#include <type_traits>
#include <vector>

#include "panel_cholqr2_step.cuh"
#include "panel_factors_owned.cuh"

namespace solvers {

namespace {

using namespace owner_grid;
using panel_cholqr2::Tall;

template <typename T>
struct HostRunner {
  std::vector<T> shared = std::vector<T>(
      std::max<int64_t>(panel_cholqr2::kTallSharedElems, panel_factors::owned::kWorkspaceElems));

  void tall(const Tall<T>& p, int blocks) {
    for (int b = 0; b < blocks; ++b) panel_cholqr2::tall_block<T>(HostGrid{}, p, b, blocks, shared.data());
  }
  void reduce(const T* partials, int count, T* out, int w) {
    for (int i = 0; i < w; ++i) {
      for (int j = 0; j < w; ++j) {
        T total = T(0);
        for (int g = 0; g < panel_cholqr2::kReduceGroups; ++g)
          total += panel_cholqr2::group_sum(partials, count, i * kN + j, g);
        out[i * w + j] = total;
      }
    }
  }
  void first_factor(const FirstFactorArgs& args) {
    panel_factors::owned::first_factor<T>(HostGrid{}, args, shared.data());
  }
  void factors(const PanelFactorsArgs& args, real_t<T> limit) {
    panel_factors::owned::run<T>(HostGrid{}, args, shared.data(), limit);
  }
};

}  // namespace

void panel_cholqr2_host(ScalarType t, const PanelCholqr2Args& args, double orthogonality_limit) {
  panel_cholqr2::check_panel_cholqr2_args(args);
  with_scalar(t, "panel_cholqr2", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    HostRunner<T> run;
    panel_cholqr2::steps<T>(args, real_t<T>(orthogonality_limit), run);
  });
}

}  // namespace solvers
