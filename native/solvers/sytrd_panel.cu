// The kernel loop of the blocked tridiagonalization (sytrd_panel.h): each column step of
// sytrd_steps.cuh (which also describes the steps) its own launch over its step grid, with the
// column's AllReduce a host call of hpcolls' C entry (or the caller's fallback). Per-block results
// are combined in one place: by a second kernel, or, where the combination is small, by the last
// block of the same kernel to finish (blocks count their arrivals; the last one sees every other
// block's fenced writes). The fused loop (sytrd_fused.cu) runs the same steps in one launch per
// panel; this file also holds the entry that picks between them (sytrd_panel).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_check.h"
#include "hemv_lower.h"
#include "scalar.cuh"
#include "sytrd_fused.h"
#include "sytrd_panel.h"
#include "sytrd_steps.cuh"

namespace solvers {
namespace {

using namespace sytrd;

// The kernel loop: each step its own launch over its step grid (sytrd_steps.cuh).

// column_part, then the last block to finish merges the blocks' sums of squares (blocks count
// their arrivals; the last one sees every other block's fenced writes) and sets the scalars.
template <typename T, typename R = real_t<T>>
__global__ void form_column(const T* panel, const T* v_mat, const T* w_mat, int64_t width, int64_t i,
                            int64_t mi, int64_t j, T* col, NormParts<R> parts, R* d, R* e, T* tau, T* scalars) {
  __shared__ bool last;
  column_part(Slice::of_launch(), panel, v_mat, w_mat, width, i, mi, col, parts);
  __threadfence();  // col and this block's part, before its arrival is counted
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(parts.arrivals, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  const R xnorm = column_norm(parts, int(gridDim.x), col, mi);
  if (threadIdx.x != 0) return;
  *parts.arrivals = 0;
  store_reflector(reflector_of(col, mi, xnorm), mi, j, d, e, tau, scalars);
}

template <typename T>
__global__ void make_reflector(const T* col, int64_t mi, int64_t j, const int64_t* cols_from_lc, int64_t nlc,
                               const T* scalars, T* v, T* vloc, T* p) {
  make_reflector_part(Slice::of_launch(), col, mi, j, cols_from_lc, nlc, scalars[kPivot], v, vloc, p);
}

template <typename T>
__global__ void local_gemv(const T* a, int64_t ld, int64_t nlr, int64_t nlc, const T* vloc,
                           const int64_t* rows_from_lr, int64_t j, T* p) {
  local_gemv_part(Slice::of_launch(), a, ld, nlr, nlc, vloc, rows_from_lr, j, p);
}

template <typename T>
__global__ void vw_dots(const T* v_mat, const T* w_mat, int64_t width, int64_t i, int64_t mi, const T* v,
                        T* parts) {
  vw_dots_part(Slice::of_launch(), v_mat, w_mat, width, i, mi, v, parts);
}

template <typename T>
__global__ void vw_combine(int64_t width, int64_t i, const T* ab_parts, int nparts, T* ab) {
  vw_combine_part(Slice::of_launch(), width, i, ab_parts, nparts, ab);
}

template <typename T>
__global__ void w_update(T* v_mat, T* w_mat, int64_t width, int64_t i, int64_t mi, const T* v, const T* p,
                         const T* ab, const T* scalars, T* dot_parts) {
  extern __shared__ unsigned char shared_raw[];
  w_update_part(Slice::of_launch(), reinterpret_cast<T*>(shared_raw), v_mat, w_mat, width, i, mi, v, p, ab, scalars,
                dot_parts);
}

template <typename T>
__global__ void w_finish(T* w_mat, int64_t width, int64_t i, int64_t mi, const T* v, const T* dot_parts,
                         int nparts, const T* scalars) {
  w_finish_part(Slice::of_launch(), w_mat, width, i, mi, v, dot_parts, nparts, scalars);
}

// Optional GPU time per phase (SytrdPanel::phase_ms): an event at every phase boundary of the
// panel, all read once at its end, so the timing adds no synchronization inside the loop.
class PhaseClock {
 public:
  PhaseClock(double* out, cudaStream_t st) : out_(out), st_(st) { mark(kSytrdPhases); }
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;
  // Ends `phase` (the time since the previous mark is counted to it).
  void mark(int phase) {
    if (out_ == nullptr) return;
    cudaEvent_t e;
    cuda_check(cudaEventCreate(&e), "cudaEventCreate(sytrd phase)");
    cuda_check(cudaEventRecord(e, st_), "cudaEventRecord(sytrd phase)");
    marks_.push_back({e, phase});
  }
  ~PhaseClock() {
    if (out_ == nullptr || marks_.empty()) return;
    const bool ok = cudaEventSynchronize(marks_.back().event) == cudaSuccess;
    for (size_t k = 1; k < marks_.size() && ok; ++k) {
      float ms = 0;
      if (cudaEventElapsedTime(&ms, marks_[k - 1].event, marks_[k].event) == cudaSuccess)
        out_[marks_[k].phase] += ms;
    }
    for (const Mark& m : marks_) cudaEventDestroy(m.event);
  }

 private:
  struct Mark {
    cudaEvent_t event;
    int phase;
  };
  double* out_;
  cudaStream_t st_;
  std::vector<Mark> marks_;
};

// Checks a launch and counts it: the kernel loop's launches per column are what the fused loop
// removes (SytrdCollStats::launches; the bench prints them per column).
void launched(const char* what, SytrdCollStats& stats) {
  cuda_check(cudaGetLastError(), what);
  stats.launches += 1;
}

template <typename T>
SytrdCollStats run_panel(const SytrdPanel& s, ScalarType t, const HpcollsComm& comm, int nranks,
                         const std::function<void(int64_t)>& fallback) {
  using R = real_t<T>;
  const Work<T> w(s.work, s.n, s.width);
  const T* panel = static_cast<const T*>(s.panel);
  T* v_mat = static_cast<T*>(s.v_mat);
  T* w_mat = static_cast<T*>(s.w_mat);
  T* p = static_cast<T*>(s.p);
  const T* local = static_cast<const T*>(s.local);
  cudaStream_t st = s.stream;
  const bool use_hemv = SytrdProduct(s.product) == SytrdProduct::HemvLower;
  SytrdCollStats stats;
  cuda_check(cudaMemsetAsync(w.ssq.arrivals, 0, sizeof(unsigned), st), "cudaMemsetAsync(sytrd arrivals)");
  stats.launches += 1;
  PhaseClock clock(s.phase_ms, st);
  for (int64_t i = 0; i < s.width; ++i) {
    const int64_t j = s.j0 + i;
    const int64_t mi = s.n - j;
    form_column<T><<<unsigned(column_blocks(mi)), kThreads, 0, st>>>(
        panel, v_mat, w_mat, s.width, i, mi, j, w.col, w.ssq, static_cast<R*>(s.d), static_cast<R*>(s.e),
        static_cast<T*>(s.tau), w.scalars);
    launched("launch(sytrd form_column)", stats);
    clock.mark(kPhaseColumn);
    if (mi == 1) break;  // the last column has no reflector: only d[n-1]
    const int64_t lr = std::lower_bound(s.rows_host, s.rows_host + s.nloc_rows, j + 1) - s.rows_host;
    const int64_t lc = std::lower_bound(s.cols_host, s.cols_host + s.nloc_cols, j + 1) - s.cols_host;
    const int64_t nlr = s.nloc_rows - lr, nlc = s.nloc_cols - lc;
    make_reflector<T><<<unsigned(reflector_blocks(mi, nlc)), kThreads, 0, st>>>(w.col, mi, j, s.cols_dev + lc, nlc,
                                                                                w.scalars, w.v, w.vloc, p);
    launched("launch(sytrd make_reflector)", stats);
    clock.mark(kPhaseReflector);
    if (use_hemv) {  // one rank: the local block is C22 itself, rows and columns j+1.. in order
      hemv_lower<T>(local + lr * s.ld + lc, s.ld, mi - 1, w.v, p, w.hemv, st);
      stats.launches += kHemvLowerLaunches;
    } else if (nlr > 0 && nlc > 0) {
      local_gemv<T><<<unsigned(gemv_blocks(nlr)), kThreads, 0, st>>>(local + lr * s.ld + lc, s.ld, nlr, nlc, w.vloc,
                                                                     s.rows_dev + lr, j, p);
      launched("launch(sytrd local_gemv)", stats);
    }
    clock.mark(kPhaseProduct);
    if (nranks > 1) {
      const auto start = std::chrono::steady_clock::now();
      const int64_t count = mi - 1;
      if (comm.allreduce_sum(p, size_t(count), int(t), st)) {  // a fallback is counted by its own collective
        stats.calls += 1;
        stats.bytes += count * int64_t(sizeof(T));
        stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      } else {
        fallback(count);
      }
      stats.launches += 1;  // the collective's own launch, either way
      clock.mark(kPhaseAllreduce);
    }
    if (i > 0) {
      const int64_t chunks = dot_chunks(mi);
      vw_dots<T><<<dim3(unsigned(chunks), unsigned(dot_column_groups(i))), kThreads, 0, st>>>(v_mat, w_mat, s.width, i,
                                                                                             mi, w.v, w.ab_parts);
      launched("launch(sytrd vw_dots)", stats);
      vw_combine<T><<<dim3(unsigned(combine_column_groups(i)), 2), kCombineWarps * 32, 0, st>>>(
          s.width, i, w.ab_parts, int(chunks), w.ab);
      launched("launch(sytrd vw_combine)", stats);
      clock.mark(kPhaseCorrection);
    }
    const int64_t g5 = update_blocks(mi);
    w_update<T><<<unsigned(g5), kThreads, w_update_shared_bytes<T>(s.width), st>>>(v_mat, w_mat, s.width, i, mi, w.v,
                                                                                   p, w.ab, w.scalars, w.dot_parts);
    launched("launch(sytrd w_update)", stats);
    w_finish<T><<<unsigned(finish_blocks(mi)), kThreads, 0, st>>>(w_mat, s.width, i, mi, w.v, w.dot_parts, int(g5),
                                                                  w.scalars);
    launched("launch(sytrd w_finish)", stats);
    clock.mark(kPhaseW);
  }
  return stats;
}

template <typename T>
size_t work_bytes(int64_t n, int64_t width, SytrdProduct product) {
  const size_t hemv = product == SytrdProduct::HemvLower ? hemv_lower_work_elems(n) : 0;
  return sizeof(T) * (Work<T>::elems(n, width) + hemv);
}

}  // namespace

size_t sytrd_work_bytes(int64_t n, int64_t width, ScalarType t, SytrdProduct product) {
  return with_scalar(t, "sytrd_panel", [&](auto* type) { return work_bytes<std::remove_pointer_t<decltype(type)>>(n, width, product); });
}

SytrdCollStats sytrd_panel(const SytrdPanel& s, ScalarType t, const HpcollsComm& comm, int nranks,
                           const std::function<void(int64_t)>& fallback) {
  if (s.width < 1 || s.width > kSytrdMaxWidth)
    throw std::invalid_argument("solvers: sytrd_panel width must be 1.." + std::to_string(kSytrdMaxWidth));
  if (s.j0 < 0 || s.j0 + s.width > s.n) throw std::invalid_argument("solvers: sytrd_panel columns out of range");
  if (SytrdProduct(s.product) == SytrdProduct::HemvLower && (nranks != 1 || s.nloc_rows != s.n || s.nloc_cols != s.n))
    throw std::invalid_argument("solvers: sytrd_panel hemv product needs the whole matrix on one rank");
  if (s.product != int(SytrdProduct::Gemv) && s.product != int(SytrdProduct::HemvLower))
    throw std::invalid_argument("solvers: sytrd_panel product must be 0 (gemv) or 1 (hemv lower)");
  if (s.fused_blocks > 0) return sytrd_fused_panel(s, t, comm);
  return with_scalar(t, "sytrd_panel", [&](auto* type) {
    return run_panel<std::remove_pointer_t<decltype(type)>>(s, t, comm, nranks, fallback);
  });
}

}  // namespace solvers
