// The fused column loop (sytrd_fused.h): a panel's columns in one cooperative launch (what ran
// on which GPU: docs/SOLVER.md, "The fused column loop").
//
// Why: the kernel loop (sytrd_panel.cu) enqueues about eight launches per column (seven kernels
// and a host-launched AllReduce); below the trailing matrix's gemv each is latency-bound, so a
// column costs the host's launch rate (a bare launch is 4-5 µs of host time) more
// than the GPU's work. Here the host launches once per panel.
//
// How the steps meet: the kernel is a cooperative launch whose blocks step through the column
// together, separated by grid barriers (cooperative groups' grid.sync, which orders every block's
// writes before it for every block after it), and the column's AllReduce is hpcolls' grid-scope
// device operation, which spreads p over every block (one block moves a column's p far slower
// than the host-launched call: docs/PERFORMANCE.md#device-api-latency):
//   1. column_part over its step grid                                  | barrier
//   2. every block merges the norm's parts itself (the same fixed tree, so the same bits: no
//      barrier to hand the pivot round); make_reflector_part            | barrier
//   3. the local gemv; vw_dots (a = Wᴴv, b = Vᴴv need v, not p)
//   4. hpcolls::device::allreduce_grid of p, in rank order              | its opening and closing
//      barriers (the first also ends step 3)
//   5. vw_combine (a, b)                                                 | barrier
//   6. w_update                                                          | barrier
//   7. w_finish                                                          | barrier (W's column, before
//      the next column reads it)
// Seven grid barriers per column instead of eight launches. The alternatives weighed: a block that
// does the AllReduce while the others wait on a device flag is the same barrier written by hand
// (with no guarantee that all blocks are resident); one block per column doing the whole product
// reads C₂₂ through one SM, far too slow past small n.
//
// Same bits as the kernel loop, on every rank: every step that reduces runs over the kernel
// loop's step grid (for_each_slice, sytrd_steps.cuh), whatever the size of the persistent grid;
// the steps that do not reduce (reflector, gemv rows, w_finish) take the persistent grid as it is.
// The AllReduce reduces in rank order as the host path's does.
//
// Residency: the blocks of every rank's kernel wait on each other (barriers) and on the peers'
// kernels (the AllReduce), so all must be resident at once, also where ranks share the GPU under
// MPS. A cooperative launch guarantees it for one grid; for the sharing ranks together, each grid
// is at most kShareDivisor-th of this rank's share of the GPU (hpcolls' rule for its own waiting
// grids, native/hpcolls/plan.cpp: full-share grids timed out at 4 ranks on one GPU).
//
// Failure: a time-out of the device AllReduce (hpcolls records it) returns Broken on every thread
// of the grid, and every block leaves, so nothing hangs; the host learns of it at the next panel
// (device_comm reads hpcolls' record) or from the loop's final check.
#include <cooperative_groups.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda_check.h"
#include "hpcolls/device/collectives.cuh"
#include "scalar.cuh"
#include "sytrd_fused.h"
#include "sytrd_steps.cuh"

namespace solvers {
namespace {

namespace cg = cooperative_groups;
using namespace sytrd;

// Each grid is at most this fraction of the rank's share of the GPU's resident blocks (above).
constexpr int kShareDivisor = 2;

// What the kernel needs of one panel (by value).
template <typename T>
struct FusedPanel {
  using R = real_t<T>;
  int64_t n, j0, width;
  const T* local;
  int64_t ld, nloc_rows, nloc_cols;
  const int64_t* rows_dev;
  const int64_t* cols_dev;
  const T* panel;
  T* v_mat;
  T* w_mat;
  R* d;
  R* e;
  T* tau;
  T* p;
  Work<T> w;
  hpcolls_device_comm_t comm;
  unsigned long long* phase_ns;  // kSytrdPhases entries, or null: not timed
};

// The first of `count` sorted global indices that is at least `value` (std::lower_bound).
__device__ inline int64_t first_at_least(const int64_t* sorted, int64_t count, int64_t value) {
  int64_t lo = 0, hi = count;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Block 0's view of the phases (SytrdPanel::phase_ms): %globaltimer at the end of each, added up
// per phase. Phases overlap across blocks (vw_dots beside the product, vw_combine beside the
// AllReduce), so each is counted where block 0 waits; nothing is counted as "correction".
class PhaseTimer {
 public:
  __device__ explicit PhaseTimer(unsigned long long* out) : out_(timing(out) ? out : nullptr), last_(now()) {}
  __device__ void mark(int phase) {
    if (out_ == nullptr) return;
    const unsigned long long t = now();
    out_[phase] += t - last_;
    last_ = t;
  }

 private:
  __device__ static bool timing(const unsigned long long* out) {
    return out != nullptr && blockIdx.x == 0 && threadIdx.x == 0;
  }
  __device__ static unsigned long long now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  unsigned long long* out_;
  unsigned long long last_;
};

// The column's in-place AllReduce of p[0:count] by the whole grid; a complex sum is the sum of its
// real and imaginary parts, so it travels as 2 count reals (the same bits).
template <typename T>
__device__ hpcolls::device::Status allreduce_sum(const hpcolls_device_comm_t& comm, T* p, int64_t count) {
  using R = real_t<T>;
  R* x = reinterpret_cast<R*>(p);
  return hpcolls::device::allreduce_grid<hpcolls::Op::Sum>(comm, x, x, size_t(count) * (sizeof(T) / sizeof(R)));
}

// Blocks an SM must hold of the kernel: two in single precision (at most 128 registers a thread,
// which it fits without spilling); one in double precision, whose column steps spill at 128
// registers (ptxas: float64 on sm_90, complex128 on sm_100), so that it may take more. The grid is
// sized from the occupancy that results (launch_fused), so either only changes how many blocks run.
template <typename T>
constexpr int kFusedMinBlocks = std::is_same_v<real_t<T>, double> ? 1 : 2;

template <typename T>
__global__ void __launch_bounds__(kThreads, kFusedMinBlocks<T>) fused_panel(FusedPanel<T> a) {
  extern __shared__ unsigned char shared_raw[];
  T* const shared = reinterpret_cast<T*>(shared_raw);
  cg::grid_group grid = cg::this_grid();
  const Slice whole{blockIdx.x, 0, gridDim.x, 1};  // the persistent grid, for steps that do not reduce
  PhaseTimer timer(a.phase_ns);
  const Work<T>& w = a.w;
  for (int64_t i = 0; i < a.width; ++i) {
    const int64_t j = a.j0 + i;
    const int64_t mi = a.n - j;
    const int64_t nparts = column_blocks(mi);
    for_each_slice(nparts, 1, [&](Slice s) { column_part(s, a.panel, a.v_mat, a.w_mat, a.width, i, mi, w.col, w.ssq); });
    grid.sync();
    const Reflector<T> r = reflector_of(w.col, mi, column_norm(w.ssq, int(nparts), w.col, mi));
    if (blockIdx.x == 0 && threadIdx.x == 0) store_reflector(r, mi, j, a.d, a.e, a.tau, w.scalars);
    timer.mark(kPhaseColumn);
    if (mi == 1) break;  // the last column has no reflector: only d[n-1]
    const int64_t lr = first_at_least(a.rows_dev, a.nloc_rows, j + 1);
    const int64_t lc = first_at_least(a.cols_dev, a.nloc_cols, j + 1);
    const int64_t nlr = a.nloc_rows - lr, nlc = a.nloc_cols - lc;
    make_reflector_part(whole, w.col, mi, j, a.cols_dev + lc, nlc, r.pivot, w.v, w.vloc, a.p);
    grid.sync();
    timer.mark(kPhaseReflector);
    if (nlr > 0 && nlc > 0)
      local_gemv_part(whole, a.local + lr * a.ld + lc, a.ld, nlr, nlc, w.vloc, a.rows_dev + lr, j, a.p);
    const int64_t chunks = dot_chunks(mi);
    if (i > 0)
      for_each_slice(chunks, dot_column_groups(i),
                     [&](Slice s) { vw_dots_part(s, a.v_mat, a.w_mat, a.width, i, mi, w.v, w.ab_parts); });
    timer.mark(kPhaseProduct);
    // The same status on every thread of the grid: on a time-out every block leaves here.
    if (allreduce_sum(a.comm, a.p, mi - 1) != hpcolls::device::Status::Ok) return;
    timer.mark(kPhaseAllreduce);
    if (i > 0)
      for_each_slice(combine_column_groups(i), 2,
                     [&](Slice s) { vw_combine_part(s, a.width, i, w.ab_parts, int(chunks), w.ab); });
    grid.sync();
    const int64_t g5 = update_blocks(mi);
    for_each_slice(g5, 1, [&](Slice s) {
      w_update_part(s, shared, a.v_mat, a.w_mat, a.width, i, mi, w.v, a.p, w.ab, w.scalars, w.dot_parts);
    });
    grid.sync();
    w_finish_part(whole, a.w_mat, a.width, i, mi, w.v, w.dot_parts, int(g5), w.scalars);
    grid.sync();
    timer.mark(kPhaseW);
  }
}

template <typename T>
size_t shared_bytes(int64_t width) {
  return w_update_shared_bytes<T>(width);
}

// The kernel's dynamic shared memory may pass the default 48 KiB with the steps' static arrays
// at wide panels: allow it (once per width; cheap).
template <typename T>
void allow_shared(int64_t width) {
  cuda_check(cudaFuncSetAttribute(reinterpret_cast<const void*>(fused_panel<T>),
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared_bytes<T>(width))),
             "cudaFuncSetAttribute(sytrd fused_panel)");
}

template <typename T>
SytrdFusedPlan plan_fused(const HpcollsComm& comm, int64_t n, int64_t width, int ranks_on_gpu) {
  const auto refuse = [](std::string why) { return SytrdFusedPlan{0, std::move(why)}; };
  if (comm.api == nullptr) return refuse("no hpcolls native path");
  if (!comm.has_device_comm())
    return refuse("hpcolls' C entry is version " + std::to_string(comm.api->version) + "; the device API needs 3");
  hpcolls_device_comm_t dc;
  try {
    dc = comm.device_comm();
  } catch (const HpcollsCallError& e) {
    return refuse(std::string("no device API on this communicator: ") + e.what());
  }
  const uint64_t largest = uint64_t(std::max<int64_t>(n - 1, 0)) * sizeof(T);
  const uint64_t fits = hpcolls_device_allreduce_max_bytes(&dc);
  if (largest > fits)
    return refuse("the first column's AllReduce is " + std::to_string(largest) + " bytes, the device API takes " +
                  std::to_string(fits) + " at " + std::to_string(dc.nranks) + " ranks (HPCOLLS_SCRATCH_BYTES)");
  int device = 0, cooperative = 0, sms = 0, per_sm = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device), "cudaDeviceGetAttribute");
  if (!cooperative) return refuse("this GPU takes no cooperative launch");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  allow_shared<T>(width);
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fused_panel<T>, kThreads, shared_bytes<T>(width)),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor(sytrd fused_panel)");
  if (per_sm < 1) return refuse("the fused kernel does not fit an SM at width " + std::to_string(width));
  return {std::max(1, per_sm * sms / (kShareDivisor * std::max(1, ranks_on_gpu))), ""};
}

template <typename T>
SytrdCollStats run_fused(const SytrdPanel& s, const HpcollsComm& comm) {
  using R = real_t<T>;
  FusedPanel<T> a{s.n, s.j0, s.width, static_cast<const T*>(s.local), s.ld, s.nloc_rows, s.nloc_cols, s.rows_dev,
                  s.cols_dev, static_cast<const T*>(s.panel), static_cast<T*>(s.v_mat), static_cast<T*>(s.w_mat),
                  static_cast<R*>(s.d), static_cast<R*>(s.e), static_cast<T*>(s.tau), static_cast<T*>(s.p),
                  Work<T>(s.work, s.n, s.width), comm.device_comm(), nullptr};
  const size_t phases_bytes = kSytrdPhases * sizeof(unsigned long long);
  if (s.phase_ms != nullptr) {
    cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&a.phase_ns), phases_bytes, s.stream), "cudaMallocAsync");
    cuda_check(cudaMemsetAsync(a.phase_ns, 0, phases_bytes, s.stream), "cudaMemsetAsync(sytrd phases)");
  }
  allow_shared<T>(s.width);
  void* args[] = {&a};
  cuda_check(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(fused_panel<T>), dim3(unsigned(s.fused_blocks)),
                                         dim3(kThreads), args, shared_bytes<T>(s.width), s.stream),
             "cudaLaunchCooperativeKernel(sytrd fused_panel)");
  SytrdCollStats stats;
  stats.launches = 1;
  for (int64_t j = s.j0; j < s.j0 + s.width && s.n - j >= 2; ++j) {  // the columns that all-reduce
    stats.calls += 1;
    stats.bytes += (s.n - j - 1) * int64_t(sizeof(T));
  }
  if (a.phase_ns != nullptr) {  // measuring only: one synchronization per panel, as PhaseClock's
    unsigned long long ns[kSytrdPhases];
    cuda_check(cudaMemcpyAsync(ns, a.phase_ns, phases_bytes, cudaMemcpyDeviceToHost, s.stream), "cudaMemcpyAsync");
    cuda_check(cudaFreeAsync(a.phase_ns, s.stream), "cudaFreeAsync");
    cuda_check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize(sytrd phases)");
    for (int k = 0; k < kSytrdPhases; ++k) s.phase_ms[k] += double(ns[k]) * 1e-6;
  }
  return stats;
}

}  // namespace

SytrdFusedPlan sytrd_fused_plan(const HpcollsComm& comm, int64_t n, int64_t width, ScalarType t, int ranks_on_gpu) {
  if (width < 1 || width > kSytrdMaxWidth)
    throw std::invalid_argument("solvers: sytrd_fused_plan width must be 1.." + std::to_string(kSytrdMaxWidth));
  return with_scalar(t, "sytrd_fused_plan", [&](auto* type) {
    return plan_fused<std::remove_pointer_t<decltype(type)>>(comm, n, width, ranks_on_gpu);
  });
}

SytrdCollStats sytrd_fused_panel(const SytrdPanel& s, ScalarType t, const HpcollsComm& comm) {
  if (comm.api == nullptr) throw std::invalid_argument("solvers: the fused sytrd loop needs hpcolls' native path");
  if (SytrdProduct(s.product) != SytrdProduct::Gemv)
    throw std::invalid_argument("solvers: the fused sytrd loop computes the gemv product only");
  return with_scalar(t, "sytrd_fused_panel", [&](auto* type) {
    return run_fused<std::remove_pointer_t<decltype(type)>>(s, comm);
  });
}

}  // namespace solvers
