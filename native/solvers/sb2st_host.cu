// sb2st's chase on the host: worker threads pipelined by per-sweep progress counters (sb2st.h);
// and, for tests, a team of host threads with a barrier playing one GPU thread block.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
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
};

// A reusable barrier for a team of host threads (C++17 has no std::barrier).
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_, waiting_ = 0;
  long generation_ = 0;
};

// One member of a team that runs a step as a GPU thread block does: the same strided loops,
// a barrier for sync, a sum posted per member and added in member order.
struct TeamExec {
  int tid, members;
  Barrier* barrier;
  unsigned char* posts;  // members * 16 bytes
  int first() const { return tid; }
  int stride() const { return members; }
  void sync() const { barrier->wait(); }
  template <typename T>
  T sum(T x, T*) const {
    T* slot = reinterpret_cast<T*>(posts);
    sync();
    slot[tid] = x;
    sync();
    T total = slot[0];
    for (int m = 1; m < members; ++m) total += slot[m];
    sync();
    return total;
  }
};

template <typename T>
void chase_as_a_block(const Sb2stArgs& args, int members) {
  const int64_t n = args.n, sweeps = std::max<int64_t>(n - 1, 0);
  const ChaseBand<T> band{static_cast<T*>(args.band), n, 2 * int64_t(args.b), args.b};
  const ChaseReflectors<T> out{static_cast<T*>(args.v), static_cast<T*>(args.tau), args.index, args.kmax,
                               args.group, args.height};
  std::vector<T> scratch(chase_space_elems(args.b));
  const ChaseSpace<T> sp = carve_space(scratch.data(), args.b);
  std::vector<unsigned char> posts(size_t(members) * 16);
  Barrier barrier(members);
  auto member = [&](int tid) {
    const TeamExec ex{tid, members, &barrier, posts.data()};
    for (int64_t s = 0; s < sweeps; ++s)
      for (int64_t k = 0; k < chase_steps(n, args.b, s); ++k) chase_step(ex, band, out, sp, s, k, [] { return true; });
  };
  std::vector<std::thread> team;
  for (int tid = 1; tid < members; ++tid) team.emplace_back(member, tid);
  member(0);
  for (auto& thread : team) thread.join();
}

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
      // Sweep s-1's steps 0 .. k before step k of sweep s starts, its step k+1 before the late
      // entries are read (sb2st.h).
      auto wait_for = [&](int64_t done) {
        if (s == 0) return true;
        const int64_t need = std::min(done, before);
        while (progress[s - 1].load(std::memory_order_acquire) < need) std::this_thread::yield();
        return true;
      };
      for (int64_t k = 0; k < steps; ++k) {
        wait_for(k + 1);
        chase_step(ex, band, out, sp, s, k, [&] { return wait_for(k + 2); });
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

void sb2st_host(const Sb2stArgs& args, ScalarType t, int threads, int block_threads) {
  if (args.b < 1) throw std::invalid_argument("solvers: sb2st needs a bandwidth >= 1");
  if (block_threads < 1) throw std::invalid_argument("solvers: sb2st's block_threads must be >= 1");
  with_scalar(t, "sb2st", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if (block_threads > 1)
      chase_as_a_block<T>(args, block_threads);
    else
      chase<T>(args, threads);
  });
}

}  // namespace solvers
