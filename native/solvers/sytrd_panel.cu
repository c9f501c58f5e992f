// Native column loop of the blocked tridiagonalization (see sytrd_panel.h and solvers/sytrd.py,
// whose _column_step is the reference for every kernel here).
//
// Per column j = j0 + i of the panel (mi = n - j rows from the diagonal down), with ᴴ the
// conjugate transpose (the transpose for a real T), as LAPACK's zlatrd (lower) computes it:
//   form_column        col = panel[i:, i] - V[i:, :i] conj(W[i, :i]) - W[i:, :i] conj(V[i, :i]),
//                      and larfg's beta, tau from ‖col[2:]‖ (by the last block to finish); d, e, tau
//   make_reflector     v = col[1:] / (alpha - beta) with v[0] = 1, also gathered at this
//                      rank's local columns; p = 0
//   local product      p[local rows] = C22_local v[local cols]: local_gemv, or on one rank
//                      hemv_lower (hemv_lower.cu), which reads only C22's lower triangle
//   AllReduce(p)       the one collective of the column (skipped on one rank)
//   vw_dots, vw_combine  a = Wᴴ v, b = Vᴴ v over the panel's earlier reflectors
//   w_update           p -= V a + W b;  w = tau p;  V[:, i] = v;  parts of wᴴv
//   w_finish           W[:, i] = w - (tau wᴴv / 2) v
// The reflector is zlarfg's: H = I - tau v vᴴ with Hᴴ x = beta e₁, beta real (its sign opposite
// to Re(alpha)), tau = (beta - alpha) / beta, and H = I (tau = 0) only when x[1:] = 0 and alpha
// is real; d = Re(col[0]) and e = beta are real. For a real T all of this is dlarfg and dlatrd.
// Kernels are sized so that every row or column gets its own warp or thread (the loop is
// latency-bound below the trailing gemv); per-block results are combined in one place — by a
// second kernel, or, where the combination is small, by the last block of the same kernel to
// finish (blocks count their arrivals; the last one sees every other block's fenced writes).
// Every reduction runs over a fixed partition in a fixed order (grid sizes depend only on the
// column's size), so the replicated V, W, d, e, tau come out bitwise identical on every rank.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_check.h"
#include "hemv_lower.h"
#include "ordered_sum.cuh"
#include "scalar.cuh"
#include "sytrd_panel.h"

namespace solvers {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxParts = 256;     // row chunks of vw_dots (their k-vectors are combined by vw_combine)
constexpr int64_t kDotRows = 32;   // rows per vw_dots chunk, at least
constexpr int kDotRowLanes = 4;    // vw_dots threads: 4 rows × 64 columns at a time
constexpr int kDotCols = kThreads / kDotRowLanes;
constexpr int kMaxDotParts = 256;  // blocks of w_update (their dot products are combined by w_finish)
constexpr int kMaxColumnBlocks = 4096;  // blocks of form_column (their sums of squares: its last block)
constexpr int kTau = 0, kPivot = 1;  // scalars[]: the column's tau and what x is divided by (pivot_factor)

__device__ inline float hypot_(float a, float b) { return hypotf(a, b); }
__device__ inline double hypot_(double a, double b) { return hypot(a, b); }
__device__ inline float copysign_(float a, float b) { return copysignf(a, b); }
__device__ inline double copysign_(double a, double b) { return copysign(a, b); }
__device__ inline float fabs_(float a) { return fabsf(a); }
__device__ inline double fabs_(double a) { return fabs(a); }
__device__ inline float sqrt_(float a) { return sqrtf(a); }
__device__ inline double sqrt_(double a) { return sqrt(a); }

template <typename T>
__device__ inline T warp_sum(T x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += shfl_xor(x, o);
  return x;
}

// v = x / (alpha - beta): a real T divides each entry by it; a complex T multiplies by its
// reciprocal, formed once as zlarfg does (zladiv), by Smith's scaling so that it neither
// overflows nor underflows where the quotient does not.
template <typename R>
__device__ inline Complex<R> pivot_factor(Complex<R> d) {
  if (fabs_(d.re) >= fabs_(d.im)) {
    const R r = d.im / d.re, s = d.re + d.im * r;
    return {R(1) / s, -r / s};
  }
  const R r = d.re / d.im, s = d.re * r + d.im;
  return {r / s, R(-1) / s};
}
template <typename R>
__device__ inline R divide_by_pivot(R x, R factor) { return x / factor; }
template <typename R>
__device__ inline Complex<R> divide_by_pivot(Complex<R> x, Complex<R> factor) { return x * factor; }

// Sum of squares and largest magnitude, merged by adding and taking the max (no division per
// element). Its norm sqrt(sum) is exact to rounding unless a square overflowed (sum not finite,
// also when an entry is NaN or Inf) or the largest is so small that squares lose digits; then
// the norm is recomputed from the entries scaled by the largest (scaled_norm).
// A complex entry adds its real and imaginary parts as two entries. R is the real type.
template <typename R>
struct SumSq {
  R sum, amax;
  __device__ void add(R x) {
    sum += x * x;
    amax = fmax(amax, fabs_(x));
  }
  __device__ void add(Complex<R> z) {
    add(z.re);
    add(z.im);
  }
  __device__ void merge(SumSq o) {
    sum += o.sum;
    amax = fmax(amax, o.amax);
  }
  __device__ bool plain_is_exact() const {
    // sqrt(smallest normal / eps): below it, squares of the largest entries are subnormal.
    const R tiny = sizeof(R) == 8 ? R(1e-145) : R(1e-15);
    return isfinite(sum) && amax >= tiny;
  }
};

// |x / scale|², the scaled norm's term (real and imaginary parts for a complex x).
template <typename R>
__device__ inline R scaled_square(R x, R scale) {
  const R y = x / scale;
  return y * y;
}
template <typename R>
__device__ inline R scaled_square(Complex<R> z, R scale) {
  const R re = z.re / scale, im = z.im / scale;
  return re * re + im * im;
}

// Block reduction in a fixed order of values held by lane 0 of each warp.
template <typename T>
__device__ T block_sum_of_warp_leaders(T mine) {
  __shared__ T part[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) part[warp] = mine;
  __syncthreads();
  T total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kWarps; ++w) total += part[w];
  return total;  // meaningful in thread 0
}

// The reflector's scalars from col and ‖col[2:]‖ (larfg on col[1:]: alpha = col[1], x = col[2:];
// H = I when x = 0 and alpha is real, as solvers/householder.py): d[j], e[j], tau[j], and tau and
// 1/(alpha - beta)'s pivot factor for the kernels after it. The real branch is dlarfg as it was
// before complex came, expression for expression (the generic one compiles to other, if
// equivalent, code for a real T).
template <typename T, typename R = real_t<T>>
__device__ void reflector_scalars(const T* col, int64_t mi, int64_t j, R xnorm, R* d, R* e, T* tau, T* scalars) {
  d[j] = real_part(load_cg(col));
  if (mi < 2) return;
  const T alpha = load_cg(col + 1);
  if constexpr (is_complex_v<T>) {
    const bool trivial = xnorm == 0 && alpha.im == 0;
    const R beta = -copysign_(hypot_(hypot_(alpha.re, alpha.im), xnorm), alpha.re);
    e[j] = trivial ? alpha.re : beta;
    const T t = trivial ? T(0) : T((beta - alpha.re) / beta, -alpha.im / beta);
    tau[j] = t;
    scalars[kTau] = t;
    scalars[kPivot] = trivial ? T(1) : pivot_factor(alpha - T(beta));
  } else {
    const bool trivial = xnorm == 0;
    const T beta = -copysign_(hypot_(alpha, xnorm), alpha);
    e[j] = trivial ? alpha : beta;
    const T t = trivial ? T(0) : (beta - alpha) / beta;
    tau[j] = t;
    scalars[kTau] = t;
    scalars[kPivot] = trivial ? T(1) : alpha - beta;
  }
}

// Parts of ‖col[2:]‖ left by form_column's blocks (R: the real type).
template <typename R>
struct NormParts {
  R* sum;
  R* amax;
  unsigned* arrivals;  // blocks done so far; the last resets it for the next column
};

// Sum of `mine` over the block's threads in a fixed tree (every thread gets it back).
template <typename T>
__device__ T block_tree_sum(T mine, T* scratch) {
  scratch[threadIdx.x] = mine;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) scratch[threadIdx.x] += scratch[threadIdx.x + half];
    __syncthreads();
  }
  const T total = scratch[0];
  __syncthreads();
  return total;
}

// col = panel[i:, i] - V[i:, :i] conj(W[i, :i]) - W[i:, :i] conj(V[i, :i]), one warp per row;
// then the last block to finish merges the blocks' sums of squares of col[2:] in block order (a
// fixed tree) and sets the reflector's scalars.
template <typename T, typename R = real_t<T>>
__global__ void form_column(const T* panel, const T* v_mat, const T* w_mat, int64_t width, int64_t i,
                            int64_t mi, int64_t j, T* col, NormParts<R> parts, R* d, R* e, T* tau, T* scalars) {
  __shared__ SumSq<R> merged[kThreads];
  __shared__ R sums[kThreads];
  __shared__ bool last;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t nwarps = int64_t(gridDim.x) * blockDim.x / 32;
  const T* vi = v_mat + i * width;
  const T* wi = w_mat + i * width;
  SumSq<R> mine{0, 0};
  for (int64_t t = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; t < mi; t += nwarps) {
    const int64_t row = (i + t) * width;
    T s = 0;
    for (int64_t k = lane; k < i; k += 32) s += v_mat[row + k] * conj(wi[k]) + w_mat[row + k] * conj(vi[k]);
    s = warp_sum(s);
    const T value = panel[row + i] - s;
    if (lane == 0) col[t] = value;
    if (t >= 2) mine.add(value);
  }
  if (lane == 0) merged[warp] = mine;
  __threadfence();  // col, before this block's arrival is counted
  __syncthreads();
  if (threadIdx.x == 0) {
    SumSq<R> block = merged[0];
    for (int w = 1; w < kWarps; ++w) block.merge(merged[w]);
    parts.sum[blockIdx.x] = block.sum;
    parts.amax[blockIdx.x] = block.amax;
    __threadfence();
    last = atomicAdd(parts.arrivals, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  SumSq<R> acc{0, 0};
  for (int q = threadIdx.x; q < int(gridDim.x); q += blockDim.x)
    acc.merge(SumSq<R>{__ldcg(parts.sum + q), __ldcg(parts.amax + q)});
  merged[threadIdx.x] = acc;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) merged[threadIdx.x].merge(merged[threadIdx.x + half]);
    __syncthreads();
  }
  const SumSq<R> total = merged[0];
  R xnorm = sqrt_(total.sum);
  if (!total.plain_is_exact() && total.amax > 0) {  // rare: scale by the largest, one more pass
    R scaled = 0;
    for (int64_t t = 2 + threadIdx.x; t < mi; t += blockDim.x) scaled += scaled_square(load_cg(col + t), total.amax);
    xnorm = isinf(total.amax) ? total.amax : total.amax * sqrt_(block_tree_sum(scaled, sums));
  }
  if (threadIdx.x != 0) return;
  *parts.arrivals = 0;
  reflector_scalars(col, mi, j, xnorm, d, e, tau, scalars);
}

// v = col[1:] / (alpha - beta) with v[0] = 1; the same at this rank's local columns; p = 0.
template <typename T>
__global__ void make_reflector(const T* col, int64_t mi, int64_t j, const int64_t* cols_from_lc, int64_t nlc,
                               const T* scalars, T* v, T* vloc, T* p) {
  const T pivot = scalars[kPivot];
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t t = first; t < mi - 1; t += stride) {
    v[t] = t == 0 ? T(1) : divide_by_pivot(col[t + 1], pivot);
    p[t] = 0;
  }
  for (int64_t c = first; c < nlc; c += stride) {
    const int64_t t = cols_from_lc[c] - (j + 1);
    vloc[c] = t == 0 ? T(1) : divide_by_pivot(col[t + 1], pivot);
  }
}

// p[global row - (j+1)] = C_local[lr:, lc:] v_local, one warp per local row.
template <typename T>
__global__ void local_gemv(const T* a, int64_t ld, int64_t nlr, int64_t nlc, const T* vloc,
                           const int64_t* rows_from_lr, int64_t j, T* p) {
  const int lane = threadIdx.x % 32;
  const int64_t nwarps = int64_t(gridDim.x) * blockDim.x / 32;
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < nlr; r += nwarps) {
    const T* row = a + r * ld;
    T s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // four loads in flight per lane
    int64_t c = lane;
    for (; c + 96 < nlc; c += 128) {
      s0 += row[c] * vloc[c];
      s1 += row[c + 32] * vloc[c + 32];
      s2 += row[c + 64] * vloc[c + 64];
      s3 += row[c + 96] * vloc[c + 96];
    }
    for (; c < nlc; c += 32) s0 += row[c] * vloc[c];
    const T s = warp_sum((s0 + s1) + (s2 + s3));
    if (lane == 0) p[rows_from_lr[r] - (j + 1)] = s;
  }
}

// Parts of a = Wᴴ v and b = Vᴴ v over panel rows i+1.. (columns k < i): block (g, c) takes row
// chunk g and columns 64c.., its threads 4 rows × 64 columns at a time (a row's entries are
// contiguous), and adds its 4 row lanes in order.
template <typename T>
__global__ void vw_dots(const T* v_mat, const T* w_mat, int64_t width, int64_t i, int64_t mi, const T* v,
                        T* parts) {
  __shared__ T lanes[2][kDotRowLanes][kDotCols];
  const int64_t rows = mi - 1;
  const int64_t chunk = (rows + gridDim.x - 1) / gridDim.x;
  const int64_t t0 = blockIdx.x * chunk, t1 = t0 + chunk < rows ? t0 + chunk : rows;
  const int tc = threadIdx.x % kDotCols, tr = threadIdx.x / kDotCols;
  const int64_t k = int64_t(blockIdx.y) * kDotCols + tc;
  T a = 0, b = 0;
  if (k < i) {
#pragma unroll 4
    for (int64_t t = t0 + tr; t < t1; t += kDotRowLanes) {
      const int64_t at = (i + 1 + t) * width + k;
      a += conj(w_mat[at]) * v[t];
      b += conj(v_mat[at]) * v[t];
    }
  }
  lanes[0][tr][tc] = a;
  lanes[1][tr][tc] = b;
  __syncthreads();
  if (tr == 0 && k < i) {
    T sa = 0, sb = 0;
#pragma unroll
    for (int q = 0; q < kDotRowLanes; ++q) {
      sa += lanes[0][q][tc];
      sb += lanes[1][q][tc];
    }
    parts[(2 * int64_t(blockIdx.x)) * width + k] = sa;
    parts[(2 * int64_t(blockIdx.x) + 1) * width + k] = sb;
  }
}

// a, b from vw_dots' parts: block (c, which) sums columns 32c.. of a (which = 0) or b, its 32
// warps taking every 32nd part (few loads in a row per thread), then adds the warps in order.
constexpr int kCombineWarps = 32;
template <typename T>
__global__ void vw_combine(int64_t width, int64_t i, const T* ab_parts, int nparts, T* ab) {
  __shared__ T sums[kCombineWarps][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t k = int64_t(blockIdx.x) * 32 + lane;
  const int which = blockIdx.y;
  T s = 0;
  if (k < i)
    for (int q = warp; q < nparts; q += kCombineWarps) s += ab_parts[(2 * int64_t(q) + which) * width + k];
  sums[warp][lane] = s;
  __syncthreads();
  if (warp == 0 && k < i) ab[which * width + k] = sum_rows_in_order(sums, lane);
}

// p -= V a + W b;  w = tau p;  W[:, i] = w, V[:, i] = v;  per-block parts of wᴴv.
template <typename T>
__global__ void w_update(T* v_mat, T* w_mat, int64_t width, int64_t i, int64_t mi, const T* v, const T* p,
                         const T* ab, const T* scalars, T* dot_parts) {
  extern __shared__ unsigned char shared_raw[];
  T* a = reinterpret_cast<T*>(shared_raw);
  T* b = a + width;
  for (int64_t k = threadIdx.x; k < i; k += blockDim.x) {
    a[k] = ab[k];
    b[k] = ab[width + k];
  }
  __syncthreads();
  const T tau = scalars[kTau];
  const int lane = threadIdx.x % 32;
  const int64_t nwarps = int64_t(gridDim.x) * blockDim.x / 32;
  T dot = 0;
  for (int64_t t = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; t < mi - 1; t += nwarps) {
    const int64_t row = (i + 1 + t) * width;
    T s = 0;
    for (int64_t k = lane; k < i; k += 32) s += v_mat[row + k] * a[k] + w_mat[row + k] * b[k];
    s = warp_sum(s);
    if (lane == 0) {
      const T w = tau * (p[t] - s);
      w_mat[row + i] = w;
      v_mat[row + i] = v[t];
      dot += conj(w) * v[t];
    }
  }
  const T total = block_sum_of_warp_leaders(dot);
  if (threadIdx.x == 0) dot_parts[blockIdx.x] = total;
}

// W[:, i] -= (tau wᴴv / 2) v; every block sums the parts of wᴴv in the same fixed tree.
template <typename T>
__global__ void w_finish(T* w_mat, int64_t width, int64_t i, int64_t mi, const T* v, const T* dot_parts,
                         int nparts, const T* scalars) {
  __shared__ T part[kThreads];
  T mine = 0;
  for (int q = threadIdx.x; q < nparts; q += blockDim.x) mine += dot_parts[q];
  const T coef = real_t<T>(0.5) * scalars[kTau] * block_tree_sum(mine, part);
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < mi - 1; t += stride)
    w_mat[(i + 1 + t) * width + i] -= coef * v[t];
}

int blocks_for(int64_t items, int64_t per_block, int64_t cap) {
  return int(std::max<int64_t>(1, std::min<int64_t>(cap, (items + per_block - 1) / per_block)));
}

// Workspace carved out of SytrdPanel::work (sizes in elements of T; the norm's parts are of the
// real type, in the room of as many T).
template <typename T>
struct Work {
  using R = real_t<T>;
  T* col;
  T* v;
  T* vloc;
  T* ab_parts;
  T* ab;
  T* dot_parts;
  T* scalars;
  NormParts<R> ssq;
  T* hemv;  // hemv_lower's scratch (SytrdProduct::HemvLower only)

  static size_t elems(int64_t n, int64_t width) {  // the counter takes the last slot
    return 3 * size_t(n) + 2 * (kMaxParts + 1) * size_t(width) + kMaxDotParts + 2 + 2 * kMaxColumnBlocks + 1;
  }
  static size_t bytes(int64_t n, int64_t width, SytrdProduct product) {
    const size_t hemv = product == SytrdProduct::HemvLower ? hemv_lower_work_elems(n) : 0;
    return sizeof(T) * (elems(n, width) + hemv);
  }
  explicit Work(void* base, int64_t n, int64_t width) {
    col = static_cast<T*>(base);
    v = col + n;
    vloc = v + n;
    ab_parts = vloc + n;
    ab = ab_parts + 2 * kMaxParts * width;
    dot_parts = ab + 2 * width;
    scalars = dot_parts + kMaxDotParts;
    ssq.sum = reinterpret_cast<R*>(scalars + 2);
    ssq.amax = ssq.sum + kMaxColumnBlocks;
    ssq.arrivals = reinterpret_cast<unsigned*>(ssq.amax + kMaxColumnBlocks);
    hemv = col + elems(n, width);
  }
};

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

void launched(const char* what) { cuda_check(cudaGetLastError(), what); }

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
  cuda_check(cudaMemsetAsync(w.ssq.arrivals, 0, sizeof(unsigned), st), "cudaMemsetAsync(sytrd arrivals)");
  PhaseClock clock(s.phase_ms, st);
  SytrdCollStats stats;
  for (int64_t i = 0; i < s.width; ++i) {
    const int64_t j = s.j0 + i;
    const int64_t mi = s.n - j;
    form_column<T><<<blocks_for(mi, kWarps, kMaxColumnBlocks), kThreads, 0, st>>>(
        panel, v_mat, w_mat, s.width, i, mi, j, w.col, w.ssq, static_cast<R*>(s.d), static_cast<R*>(s.e),
        static_cast<T*>(s.tau), w.scalars);
    launched("launch(sytrd form_column)");
    clock.mark(kPhaseColumn);
    if (mi == 1) break;  // the last column has no reflector: only d[n-1]
    const int64_t lr = std::lower_bound(s.rows_host, s.rows_host + s.nloc_rows, j + 1) - s.rows_host;
    const int64_t lc = std::lower_bound(s.cols_host, s.cols_host + s.nloc_cols, j + 1) - s.cols_host;
    const int64_t nlr = s.nloc_rows - lr, nlc = s.nloc_cols - lc;
    make_reflector<T><<<blocks_for(std::max(mi, nlc), kThreads, 1024), kThreads, 0, st>>>(
        w.col, mi, j, s.cols_dev + lc, nlc, w.scalars, w.v, w.vloc, p);
    launched("launch(sytrd make_reflector)");
    clock.mark(kPhaseReflector);
    if (use_hemv) {  // one rank: the local block is C22 itself, rows and columns j+1.. in order
      hemv_lower<T>(local + lr * s.ld + lc, s.ld, mi - 1, w.v, p, w.hemv, st);
    } else if (nlr > 0 && nlc > 0) {
      local_gemv<T><<<blocks_for(nlr, kWarps, 16384), kThreads, 0, st>>>(local + lr * s.ld + lc, s.ld, nlr, nlc,
                                                                          w.vloc, s.rows_dev + lr, j, p);
      launched("launch(sytrd local_gemv)");
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
      clock.mark(kPhaseAllreduce);
    }
    if (i > 0) {
      const int chunks = blocks_for(mi - 1, kDotRows, kMaxParts);
      const dim3 dots(chunks, unsigned((i + kDotCols - 1) / kDotCols));
      vw_dots<T><<<dots, kThreads, 0, st>>>(v_mat, w_mat, s.width, i, mi, w.v, w.ab_parts);
      launched("launch(sytrd vw_dots)");
      vw_combine<T><<<dim3(unsigned((i + 31) / 32), 2), kCombineWarps * 32, 0, st>>>(s.width, i, w.ab_parts, chunks,
                                                                                    w.ab);
      launched("launch(sytrd vw_combine)");
      clock.mark(kPhaseCorrection);
    }
    const int g5 = blocks_for(mi - 1, kWarps, kMaxDotParts);
    w_update<T><<<g5, kThreads, 2 * s.width * sizeof(T), st>>>(v_mat, w_mat, s.width, i, mi, w.v, p, w.ab,
                                                               w.scalars, w.dot_parts);
    launched("launch(sytrd w_update)");
    w_finish<T><<<blocks_for(mi - 1, kThreads, 256), kThreads, 0, st>>>(w_mat, s.width, i, mi, w.v, w.dot_parts,
                                                                        g5, w.scalars);
    launched("launch(sytrd w_finish)");
    clock.mark(kPhaseW);
  }
  return stats;
}

}  // namespace

size_t sytrd_work_bytes(int64_t n, int64_t width, ScalarType t, SytrdProduct product) {
  return with_scalar(t, "sytrd_panel", [&](auto* type) { return Work<std::remove_pointer_t<decltype(type)>>::bytes(n, width, product); });
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
  return with_scalar(t, "sytrd_panel", [&](auto* type) {
    return run_panel<std::remove_pointer_t<decltype(type)>>(s, t, comm, nranks, fallback);
  });
}

}  // namespace solvers
