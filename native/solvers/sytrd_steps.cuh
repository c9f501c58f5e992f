// The column step of the blocked tridiagonalization as device functions, shared by its two native
// loops (sytrd_panel.h): the kernel loop (sytrd_panel.cu: each step its own launch) and the fused
// loop (sytrd_fused.cu: a panel's columns in one cooperative launch). solvers/sytrd.py's
// _column_step is the reference for every step here.
//
// Per column j = j0 + i of the panel (mi = n - j rows from the diagonal down), with ᴴ the
// conjugate transpose (the transpose for a real T), as LAPACK's zlatrd (lower) computes it:
//   column_part, column_norm   col = panel[i:, i] - V[i:, :i] conj(W[i, :i]) - W[i:, :i] conj(V[i, :i]),
//                      and ‖col[2:]‖ from the parts' sums of squares; reflector_of: larfg's beta,
//                      tau; d, e, tau
//   make_reflector_part  v = col[1:] / (alpha - beta) with v[0] = 1, also gathered at this
//                      rank's local columns; p = 0
//   local product      p[local rows] = C22_local v[local cols]: local_gemv_part, or on one rank
//                      hemv_lower (hemv_lower.cu), which reads only C22's lower triangle
//   AllReduce(p)       the one collective of the column (skipped on one rank)
//   vw_dots_part, vw_combine_part  a = Wᴴ v, b = Vᴴ v over the panel's earlier reflectors
//   w_update_part      p -= V a + W b;  w = tau p;  V[:, i] = v;  parts of wᴴv
//   w_finish_part      W[:, i] = w - (tau wᴴv / 2) v
// The reflector is zlarfg's: H = I - tau v vᴴ with Hᴴ x = beta e₁, beta real (its sign opposite
// to Re(alpha)), tau = (beta - alpha) / beta, and H = I (tau = 0) only when x[1:] = 0 and alpha
// is real; d = Re(col[0]) and e = beta are real. For a real T all of this is dlarfg and dlatrd.
//
// Each step is written for one block of a step grid (a Slice: the block's index and the grid's
// size), so that the kernel loop runs it as its own launch (Slice::of_launch) and the fused loop
// runs the same grid's blocks over its persistent grid (for_each_slice): both loops partition
// every reduction the same way, in the same order, so they compute the same bits. Step grids are
// sized so that every row or column gets its own warp or thread (the loop is latency-bound below
// the trailing gemv); their sizes depend only on the column's size (the *_blocks functions), so
// the replicated V, W, d, e, tau come out bitwise identical on every rank.
#pragma once
#include <cstdint>

#include "ordered_sum.cuh"
#include "scalar.cuh"

namespace solvers {
namespace sytrd {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxParts = 256;     // row chunks of vw_dots (their k-vectors are combined by vw_combine)
constexpr int64_t kDotRows = 32;   // rows per vw_dots chunk, at least
constexpr int kDotRowLanes = 4;    // vw_dots threads: 4 rows × 64 columns at a time
constexpr int kDotCols = kThreads / kDotRowLanes;
constexpr int kMaxDotParts = 256;  // blocks of w_update (their dot products are combined by w_finish)
constexpr int kMaxColumnBlocks = 4096;  // blocks of column_part (their sums of squares: column_norm)
constexpr int kCombineWarps = 32;  // warps of a vw_combine block (a block of fewer runs them in turn)
constexpr int kTau = 0, kPivot = 1;  // scalars[]: the column's tau and what x is divided by (pivot_factor)

// ---- step grids: the same in both loops ------------------------------------------------------

__host__ __device__ inline int64_t blocks_for(int64_t items, int64_t per_block, int64_t cap) {
  const int64_t want = (items + per_block - 1) / per_block;
  return want < 1 ? 1 : want > cap ? cap : want;
}
__host__ __device__ inline int64_t column_blocks(int64_t mi) { return blocks_for(mi, kWarps, kMaxColumnBlocks); }
__host__ __device__ inline int64_t reflector_blocks(int64_t mi, int64_t nlc) {
  return blocks_for(mi > nlc ? mi : nlc, kThreads, 1024);
}
__host__ __device__ inline int64_t gemv_blocks(int64_t nlr) { return blocks_for(nlr, kWarps, 16384); }
__host__ __device__ inline int64_t dot_chunks(int64_t mi) { return blocks_for(mi - 1, kDotRows, kMaxParts); }
__host__ __device__ inline int64_t dot_column_groups(int64_t i) { return (i + kDotCols - 1) / kDotCols; }
__host__ __device__ inline int64_t combine_column_groups(int64_t i) { return (i + 31) / 32; }
__host__ __device__ inline int64_t update_blocks(int64_t mi) { return blocks_for(mi - 1, kWarps, kMaxDotParts); }
__host__ __device__ inline int64_t finish_blocks(int64_t mi) { return blocks_for(mi - 1, kThreads, 256); }

// The block of a step grid this block computes: its index (x, y) and the grid's size (nx, ny).
struct Slice {
  int64_t x, y, nx, ny;
  __device__ static Slice of_launch() { return {blockIdx.x, blockIdx.y, gridDim.x, gridDim.y}; }
};

// body(slice) for every block of an nx × ny step grid, the persistent grid's blocks taking them
// in turn; blocks below `busy` take none (they do other work meanwhile), unless there are no
// others. The barrier after each keeps a block's shared memory from being rewritten by its next
// slice while a thread still reads it.
template <typename Body>
__device__ void for_each_slice(int64_t nx, int64_t ny, Body body, unsigned busy = 0) {
  const unsigned first = gridDim.x > busy ? busy : 0;
  if (blockIdx.x < first) return;
  for (int64_t q = blockIdx.x - first; q < nx * ny; q += gridDim.x - first) {
    body(Slice{q % nx, q / nx, nx, ny});
    __syncthreads();
  }
}

// ---- small helpers -----------------------------------------------------------------------------

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
// the norm is recomputed from the entries scaled by the largest (column_norm).
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

// Block reduction in a fixed order of values held by lane 0 of each warp (blocks of kThreads).
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

// ---- the steps ---------------------------------------------------------------------------------

// Parts of ‖col[2:]‖ left by column_part's blocks (R: the real type).
template <typename R>
struct NormParts {
  R* sum;
  R* amax;
  unsigned* arrivals;  // the kernel loop's blocks done so far; its last resets it for the next column
};

// col = panel[i:, i] - V[i:, :i] conj(W[i, :i]) - W[i:, :i] conj(V[i, :i]), one warp per row of
// the slice; the slice's sum of squares of col[2:] (its warps merged in order) into parts[s.x].
template <typename T, typename R = real_t<T>>
__device__ void column_part(Slice s, const T* panel, const T* v_mat, const T* w_mat, int64_t width, int64_t i,
                            int64_t mi, T* col, NormParts<R> parts) {
  __shared__ SumSq<R> merged[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t nwarps = s.nx * blockDim.x / 32;
  const T* vi = v_mat + i * width;
  const T* wi = w_mat + i * width;
  SumSq<R> mine{0, 0};
  for (int64_t t = (s.x * blockDim.x + threadIdx.x) / 32; t < mi; t += nwarps) {
    const int64_t row = (i + t) * width;
    T acc = 0;
    for (int64_t k = lane; k < i; k += 32) acc += v_mat[row + k] * conj(wi[k]) + w_mat[row + k] * conj(vi[k]);
    acc = warp_sum(acc);
    const T value = panel[row + i] - acc;
    if (lane == 0) col[t] = value;
    if (t >= 2) mine.add(value);
  }
  if (lane == 0) merged[warp] = mine;
  __syncthreads();
  if (threadIdx.x == 0) {
    SumSq<R> block = merged[0];
    for (int w = 1; w < kWarps; ++w) block.merge(merged[w]);
    parts.sum[s.x] = block.sum;
    parts.amax[s.x] = block.amax;
  }
}

// ‖col[2:]‖ from the nparts parts column_part left, merged in a fixed tree; every thread of the
// block gets it. Reads what other blocks wrote: the caller has ordered their writes before it
// (the kernel loop's last block to arrive, or the fused loop's grid barrier).
template <typename T, typename R = real_t<T>>
__device__ R column_norm(NormParts<R> parts, int nparts, const T* col, int64_t mi) {
  __shared__ SumSq<R> merged[kThreads];
  __shared__ R sums[kThreads];
  SumSq<R> acc{0, 0};
  for (int q = threadIdx.x; q < nparts; q += blockDim.x) acc.merge(SumSq<R>{__ldcg(parts.sum + q), __ldcg(parts.amax + q)});
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
  __syncthreads();  // every thread has read merged[0] before a later step of the block rewrites it
  return xnorm;
}

// The reflector's scalars from col and ‖col[2:]‖ (larfg on col[1:]: alpha = col[1], x = col[2:];
// H = I when x = 0 and alpha is real, as solvers/householder.py): d, e, tau and 1/(alpha - beta)'s
// pivot factor (e, tau, pivot only where mi >= 2). The real branch is dlarfg as it was before
// complex came, expression for expression (the generic one compiles to other, if equivalent, code
// for a real T).
template <typename T, typename R = real_t<T>>
struct Reflector {
  R d, e;
  T tau, pivot;
};
template <typename T, typename R = real_t<T>>
__device__ Reflector<T> reflector_of(const T* col, int64_t mi, R xnorm) {
  Reflector<T> r{};
  r.d = real_part(load_cg(col));
  if (mi < 2) return r;
  const T alpha = load_cg(col + 1);
  if constexpr (is_complex_v<T>) {
    const bool trivial = xnorm == 0 && alpha.im == 0;
    const R beta = -copysign_(hypot_(hypot_(alpha.re, alpha.im), xnorm), alpha.re);
    r.e = trivial ? alpha.re : beta;
    r.tau = trivial ? T(0) : T((beta - alpha.re) / beta, -alpha.im / beta);
    r.pivot = trivial ? T(1) : pivot_factor(alpha - T(beta));
  } else {
    const bool trivial = xnorm == 0;
    const T beta = -copysign_(hypot_(alpha, xnorm), alpha);
    r.e = trivial ? alpha : beta;
    r.tau = trivial ? T(0) : (beta - alpha) / beta;
    r.pivot = trivial ? T(1) : alpha - beta;
  }
  return r;
}
// d[j], e[j], tau[j], and tau and the pivot for the steps after it (by one thread).
template <typename T, typename R = real_t<T>>
__device__ void store_reflector(const Reflector<T>& r, int64_t mi, int64_t j, R* d, R* e, T* tau, T* scalars) {
  d[j] = r.d;
  if (mi < 2) return;
  e[j] = r.e;
  tau[j] = r.tau;
  scalars[kTau] = r.tau;
  scalars[kPivot] = r.pivot;
}

// v = col[1:] / (alpha - beta) with v[0] = 1; the same at this rank's local columns; p = 0.
template <typename T>
__device__ void make_reflector_part(Slice s, const T* col, int64_t mi, int64_t j, const int64_t* cols_from_lc,
                                    int64_t nlc, T pivot, T* v, T* vloc, T* p) {
  const int64_t first = s.x * blockDim.x + threadIdx.x;
  const int64_t stride = s.nx * blockDim.x;
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
__device__ void local_gemv_part(Slice s, const T* a, int64_t ld, int64_t nlr, int64_t nlc, const T* vloc,
                                const int64_t* rows_from_lr, int64_t j, T* p) {
  const int lane = threadIdx.x % 32;
  const int64_t nwarps = s.nx * blockDim.x / 32;
  for (int64_t r = (s.x * blockDim.x + threadIdx.x) / 32; r < nlr; r += nwarps) {
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
    const T sum = warp_sum((s0 + s1) + (s2 + s3));
    if (lane == 0) p[rows_from_lr[r] - (j + 1)] = sum;
  }
}

// Parts of a = Wᴴ v and b = Vᴴ v over panel rows i+1.. (columns k < i): slice (g, c) takes row
// chunk g and columns 64c.., its threads 4 rows × 64 columns at a time (a row's entries are
// contiguous), and adds its 4 row lanes in order.
template <typename T>
__device__ void vw_dots_part(Slice s, const T* v_mat, const T* w_mat, int64_t width, int64_t i, int64_t mi,
                             const T* v, T* parts) {
  __shared__ T lanes[2][kDotRowLanes][kDotCols];
  const int64_t rows = mi - 1;
  const int64_t chunk = (rows + s.nx - 1) / s.nx;
  const int64_t t0 = s.x * chunk, t1 = t0 + chunk < rows ? t0 + chunk : rows;
  const int tc = threadIdx.x % kDotCols, tr = threadIdx.x / kDotCols;
  const int64_t k = s.y * kDotCols + tc;
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
    parts[(2 * s.x) * width + k] = sa;
    parts[(2 * s.x + 1) * width + k] = sb;
  }
}

// a, b from vw_dots' parts: slice (c, which) sums columns 32c.. of a (which = 0) or b, each of its
// kCombineWarps warps taking every kCombineWarps-th part (few loads in a row per thread), then
// adds the warps in order. A block of fewer warps runs those warps in turn: the same sums.
template <typename T>
__device__ void vw_combine_part(Slice s, int64_t width, int64_t i, const T* ab_parts, int nparts, T* ab) {
  __shared__ T sums[kCombineWarps][32];
  const int lane = threadIdx.x % 32;
  const int64_t k = s.x * 32 + lane;
  const int64_t which = s.y;
  for (int warp = threadIdx.x / 32; warp < kCombineWarps; warp += blockDim.x / 32) {
    T acc = 0;
    if (k < i)
      for (int q = warp; q < nparts; q += kCombineWarps) acc += ab_parts[(2 * int64_t(q) + which) * width + k];
    sums[warp][lane] = acc;
  }
  __syncthreads();
  if (threadIdx.x < 32 && k < i) ab[which * width + k] = sum_rows_in_order(sums, lane);
}

// The room for a and b in shared memory that w_update_part takes (2 * width entries of T).
template <typename T>
__host__ __device__ inline size_t w_update_shared_bytes(int64_t width) { return 2 * size_t(width) * sizeof(T); }

// p -= V a + W b;  w = tau p;  W[:, i] = w, V[:, i] = v;  the slice's part of wᴴv. `shared`: the
// block's w_update_shared_bytes.
template <typename T>
__device__ void w_update_part(Slice s, T* shared, T* v_mat, T* w_mat, int64_t width, int64_t i, int64_t mi,
                              const T* v, const T* p, const T* ab, const T* scalars, T* dot_parts) {
  T* a = shared;
  T* b = a + width;
  for (int64_t k = threadIdx.x; k < i; k += blockDim.x) {
    a[k] = ab[k];
    b[k] = ab[width + k];
  }
  __syncthreads();
  const T tau = scalars[kTau];
  const int lane = threadIdx.x % 32;
  const int64_t nwarps = s.nx * blockDim.x / 32;
  T dot = 0;
  for (int64_t t = (s.x * blockDim.x + threadIdx.x) / 32; t < mi - 1; t += nwarps) {
    const int64_t row = (i + 1 + t) * width;
    T acc = 0;
    for (int64_t k = lane; k < i; k += 32) acc += v_mat[row + k] * a[k] + w_mat[row + k] * b[k];
    acc = warp_sum(acc);
    if (lane == 0) {
      const T w = tau * (p[t] - acc);
      w_mat[row + i] = w;
      v_mat[row + i] = v[t];
      dot += conj(w) * v[t];
    }
  }
  const T total = block_sum_of_warp_leaders(dot);
  if (threadIdx.x == 0) dot_parts[s.x] = total;
}

// W[:, i] -= (tau wᴴv / 2) v; every block sums the parts of wᴴv in the same fixed tree.
template <typename T>
__device__ void w_finish_part(Slice s, T* w_mat, int64_t width, int64_t i, int64_t mi, const T* v,
                              const T* dot_parts, int nparts, const T* scalars) {
  __shared__ T part[kThreads];
  T mine = 0;
  for (int q = threadIdx.x; q < nparts; q += blockDim.x) mine += dot_parts[q];
  const T coef = real_t<T>(0.5) * scalars[kTau] * block_tree_sum(mine, part);
  const int64_t stride = s.nx * blockDim.x;
  for (int64_t t = s.x * blockDim.x + threadIdx.x; t < mi - 1; t += stride) w_mat[(i + 1 + t) * width + i] -= coef * v[t];
}

// ---- workspace ---------------------------------------------------------------------------------

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

  // The counter takes the last slot.
  static size_t elems(int64_t n, int64_t width) {
    return 3 * size_t(n) + 2 * (kMaxParts + 1) * size_t(width) + kMaxDotParts + 2 + 2 * kMaxColumnBlocks + 1;
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

}  // namespace sytrd
}  // namespace solvers
