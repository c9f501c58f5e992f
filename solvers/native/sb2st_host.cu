// sb2st's chase on the host: worker threads pipelined by per-sweep progress counters (sb2st.h).
#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sb2st.h"
#include "sb2st_step.cuh"

namespace solvers {
namespace {

// One host thread runs every index of a step's loops, in order.
struct HostExec {
  int first() const { return 0; }
  int stride() const { return 1; }
  void sync() const {}
  template <typename T>
  T sum(T x, T*) const { return x; }
  template <typename T>
  T load(const T* p) const { return *p; }
};

template <typename T>
void chase(const Sb2stArgs& args, int threads) {
  const int64_t n = args.n, sweeps = std::max<int64_t>(n - 1, 0);
  if (sweeps == 0) return;
  const ChaseBand<T> band{static_cast<T*>(args.band), n, 2 * int64_t(args.b), args.b};
  const ChaseReflectors<T> out{static_cast<T*>(args.v), static_cast<T*>(args.tau), args.index, args.kmax,
                               args.group, args.height};
  std::unique_ptr<std::atomic<int64_t>[]> progress(new std::atomic<int64_t>[sweeps]);
  for (int64_t s = 0; s < sweeps; ++s) progress[s].store(0, std::memory_order_relaxed);
  std::atomic<int64_t> next{0};
  auto worker = [&]() {
    std::vector<T> scratch(chase_space_elems(args.b));
    const ChaseSpace<T> sp = carve_space(scratch.data(), args.b);
    const HostExec ex;
    for (int64_t s; (s = next.fetch_add(1)) < sweeps;) {
      const int64_t steps = chase_steps(n, args.b, s);
      const int64_t before = s > 0 ? chase_steps(n, args.b, s - 1) : 0;
      for (int64_t k = 0; k < steps; ++k) {
        if (s > 0) {
          const int64_t need = std::min(k + 2, before);
          while (progress[s - 1].load(std::memory_order_acquire) < need) std::this_thread::yield();
        }
        chase_step(ex, band, out, sp, s, k);
        progress[s].store(k + 1, std::memory_order_release);
      }
    }
  };
  const int count = int(std::max<int64_t>(1, std::min<int64_t>(threads, sweeps)));
  std::vector<std::thread> pool;
  for (int t = 1; t < count; ++t) pool.emplace_back(worker);
  worker();
  for (auto& thread : pool) thread.join();
}

}  // namespace

void sb2st_host(const Sb2stArgs& args, ScalarType t, int threads) {
  if (args.b < 1) throw std::invalid_argument("solvers: sb2st needs a bandwidth >= 1");
  with_scalar(t, "sb2st", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    chase<T>(args, threads);
  });
}

}  // namespace solvers
