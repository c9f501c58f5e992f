// Selected tridiagonal eigenpairs on the host (stein.h): the GPU's steps (stein_step.cuh) with a
// pass's kLanes points taken one after another, eigenvalues and vectors shared out over threads.
#include <algorithm>
#include <stdexcept>
#include <thread>
#include <vector>

#include "stein.h"
#include "stein_step.cuh"

namespace solvers {
namespace {

// f(j) for j in [0, count), in contiguous parts over `threads` threads.
template <typename F>
void parallel_for(int64_t count, int threads, F f) {
  if (threads < 1) throw std::invalid_argument("solvers: stein needs at least one thread");
  const int64_t parts = std::min<int64_t>(threads, count);
  if (parts <= 1) {
    for (int64_t j = 0; j < count; ++j) f(j);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t p = 0; p < parts; ++p)
    pool.emplace_back([=] {
      for (int64_t j = count * p / parts; j < count * (p + 1) / parts; ++j) f(j);
    });
  for (auto& t : pool) t.join();
}

double host_eigenvalue(const Tridiagonal& t, const BisectionBounds& bounds, int64_t index) {
  double lo = bounds.lower, hi = bounds.upper;
  for (int pass = 0; pass < stein::kMaxPasses && !stein::converged(lo, hi, bounds.abstol, bounds.pivmin); ++pass) {
    int first = stein::kLanes;
    double at = hi, before = lo;
    for (int lane = 0; lane < stein::kLanes; ++lane) {
      const double x = stein::pass_point(lo, hi, lane);
      if (stein::sturm_count(t.d, t.e2, t.n, x, bounds.pivmin) >= index) {
        first = lane;
        at = x;
        break;
      }
      before = x;
    }
    if (!stein::narrow(first, at, before, lo, hi)) break;
  }
  return (lo + hi) / 2;
}

}  // namespace

void stein_eigenvalues_host(const Tridiagonal& t, const BisectionBounds& bounds, int64_t first, int64_t count,
                            double* w, int threads) {
  parallel_for(count, threads, [&](int64_t j) { w[j] = host_eigenvalue(t, bounds, first + j); });
}

void stein_vectors_host(const Tridiagonal& t, const double* w, double onenrm, int64_t first_vector,
                        const InverseIterationWork& work, int32_t* iterations, int threads) {
  parallel_for(work.count, threads, [&](int64_t j) {
    const stein::VectorView v{work.a + j, work.r + j, work.b + j, work.u2 + j,
                              work.l + j, work.swap + j, work.y + j, work.count};
    iterations[j] = stein::inverse_iteration(t.d, t.e, t.n, w[j], uint64_t(first_vector + j), onenrm, v);
  });
}

}  // namespace solvers
