// The phases of panel_factors.h for w > 64 (narrower panels: panel_factors_owned.cuh), written
// once for the host and the GPU: every loop is "each thread takes indices first, first + stride,
// ..." (one thread takes them all on the host, a thread block shares them on the GPU) and `sync`
// separates what one phase writes from what the next reads. Every thread takes a decision (a pivot, a breakdown) from the same values, so
// all threads of the block leave together. The sums of the triangular solves are unrolled four
// ways (SOLVERS_UNROLL_4): unrolled fully, their loads need more than 255 registers in
// complex128.
#pragma once
#include <cstdint>

#include "panel_factors.h"
#include "scalar.cuh"
#include "unroll.cuh"

namespace solvers {
namespace panel_factors {

// -conj(x)/|x| (so that 1 - d x = 1 + |x|), and -1 for x = 0.
template <typename T>
__host__ __device__ inline T unit_opposite(T x) {
  const real_t<T> magnitude = abs_of(x);
  return magnitude == real_t<T>(0) ? T(-1) : (real_t<T>(-1) / magnitude) * conj(x);
}

// Row-major w × w views of the inputs, the output's parts and the scratch.
template <typename T>
struct Views {
  int w;
  const T *gram, *q1, *l1;
  T *v1, *k, *t, *r, *tau;  // out's rows 0, w, 2w, 3w and 4w
  T *l2, *s, *d;            // the workspace: L₂ (later M), Q's top block factored in place, D
  int32_t* status;

  // `work`: panel_factors_scratch_elems(w) scalars (the GPU's shared memory where they fit)
  __host__ __device__ Views(const PanelFactorsArgs& a, T* work)
      : w(a.w), gram(static_cast<const T*>(a.gram)), q1(static_cast<const T*>(a.q1_top)),
        l1(static_cast<const T*>(a.l1)), status(a.status) {
    T* out = static_cast<T*>(a.out);
    const int64_t sq = int64_t(w) * w;
    v1 = out, k = out + sq, t = out + 2 * sq, r = out + 3 * sq, tau = out + 4 * sq;
    l2 = work, s = work + sq, d = work + 2 * sq;
  }
};

// Q₁ᴴQ₁ within `limit` of I entrywise (copied into L₂'s place on the way), and *status 0 on entry?
#pragma nv_exec_check_disable
template <typename T, typename Exec>
__host__ __device__ bool orthogonal_enough(const Exec& ex, const Views<T>& m, real_t<T> limit) {
  const int w = m.w;
  for (int idx = ex.first(); idx < w * w; idx += ex.stride()) {
    const T g = m.gram[idx];
    m.l2[idx] = g;
    const T off = idx / w == idx % w ? g - T(1) : g;
    if (!(abs_of(off) <= limit)) *m.status = kPanelFactorsNotOrthogonal;
  }
  ex.sync();
  return *m.status == kPanelFactorsDone;
}

// L₂ L₂ᴴ = Q₁ᴴQ₁ in place (lower triangle), right-looking; false where a pivot is not positive.
#pragma nv_exec_check_disable
template <typename T, typename Exec>
__host__ __device__ bool cholesky(const Exec& ex, const Views<T>& m) {
  using R = real_t<T>;
  const int w = m.w;
  T* l = m.l2;
  for (int c = 0; c < w; ++c) {
    const R pivot = real_part(l[c * w + c]);
    if (!(pivot > R(0))) {
      if (ex.first() == 0) *m.status = kPanelFactorsNotDefinite;
      return false;
    }
    const R root = r_sqrt(pivot), inverse = R(1) / root;
    ex.sync();  // every thread has read the pivot before it is overwritten
    for (int i = c + ex.first(); i < w; i += ex.stride()) l[i * w + c] = i == c ? T(root) : inverse * l[i * w + c];
    ex.sync();
    const int rest = w - c - 1;
    for (int idx = ex.first(); idx < rest * rest; idx += ex.stride()) {
      const int i = c + 1 + idx / rest, j = c + 1 + idx % rest;
      if (j <= i) l[i * w + j] -= l[i * w + c] * conj(l[j * w + c]);
    }
    ex.sync();
  }
  return true;
}

// An upper triangular w × w operand read in place: either the matrix itself (row-major) or
// the conjugate transpose of a lower triangular one, with its diagonal or a unit one.
template <typename T>
struct Upper {
  const T* a;
  int w;
  bool adjoint_of_lower;
  bool unit;
  __host__ __device__ T at(int k, int j) const { return adjoint_of_lower ? conj(a[j * w + k]) : a[k * w + j]; }
  __host__ __device__ T inverse_diagonal(int j) const { return unit ? T(1) : reciprocal(a[j * w + j]); }
};

// X U = B for X in place of b (w × w, row-major), U upper: column by column, each column's
// division and its elimination from the later columns shared out over all rows at once. With
// `upper_only`, B (hence X) is upper triangular and only b's upper triangle is read or written
// (its strict lower part may hold U's own data: T's solve in place).
#pragma nv_exec_check_disable
template <typename T, typename Exec>
__host__ __device__ void solve_right_upper(const Exec& ex, int w, T* b, const Upper<T>& u, bool upper_only) {
  for (int j = 0; j < w; ++j) {
    const int rows = upper_only ? j + 1 : w;
    if (!u.unit) {
      const T inverse = u.inverse_diagonal(j);
      for (int i = ex.first(); i < rows; i += ex.stride()) b[i * w + j] = b[i * w + j] * inverse;
      ex.sync();
    }
    const int rest = w - j - 1;
    for (int idx = ex.first(); idx < rows * rest; idx += ex.stride()) {
      const int i = idx / rest, c = j + 1 + idx % rest;
      b[i * w + c] -= b[i * w + j] * u.at(j, c);
    }
    ex.sync();
  }
}

// Q's top block, Q₁[:w] R₂⁻¹ (R₂ = L₂ᴴ), into s.
#pragma nv_exec_check_disable
template <typename T, typename Exec>
__host__ __device__ void second_pass_top(const Exec& ex, const Views<T>& m) {
  const int w = m.w;
  for (int idx = ex.first(); idx < w * w; idx += ex.stride()) m.s[idx] = m.q1[idx];
  ex.sync();
  solve_right_upper(ex, w, m.s, Upper<T>{m.l2, w, true, false}, false);
}

// E - Q D = V U in place in s (V's strict lower part below, U above), D into d. The columns of
// E stay unit vectors under the elimination, so s holds Q's part only, and a later column's d_j
// is a common factor of it, applied when that column is reached.
#pragma nv_exec_check_disable
template <typename T, typename Exec>
__host__ __device__ void lu_with_signs(const Exec& ex, const Views<T>& m) {
  using R = real_t<T>;
  const int w = m.w;
  T* s = m.s;
  for (int c = 0; c < w; ++c) {
    const T x = s[c * w + c];
    const T dc = unit_opposite(x);
    const R pivot = R(1) + abs_of(x), inverse = R(1) / pivot;
    ex.sync();  // every thread has read x before it is overwritten
    for (int i = ex.first(); i < w; i += ex.stride()) {
      if (i == c) {
        s[c * w + c] = T(pivot);
        m.d[c] = dc;
      } else {
        const T scaled = -(dc * s[i * w + c]);
        s[i * w + c] = i < c ? scaled : inverse * scaled;
      }
    }
    ex.sync();
    const int rest = w - c - 1;
    for (int idx = ex.first(); idx < rest * rest; idx += ex.stride()) {
      const int i = c + 1 + idx / rest, j = c + 1 + idx % rest;
      s[i * w + j] -= s[i * w + c] * s[c * w + j];
    }
    ex.sync();
  }
}

// V₁, tau, R_h = Dᴴ R₂ R₁ out entry by entry, and M = U Dᴴ R₂ (through K's place into L₂'s);
// then T = U V₁⁻ᴴ in place of U (V₁ below it in s) and K = -R₂⁻¹ D U⁻¹ = -M⁻¹ (D⁻¹ = Dᴴ) in s,
// each copied out: every solve works in the workspace.
#pragma nv_exec_check_disable
template <typename T, typename Exec>
__host__ __device__ void outputs(const Exec& ex, const Views<T>& m) {
  const int w = m.w;
  T *s = m.s, *l2 = m.l2;
  const T *l1 = m.l1, *d = m.d;
  for (int idx = ex.first(); idx < w * w; idx += ex.stride()) {
    const int i = idx / w, j = idx % w;
    m.v1[idx] = i > j ? s[idx] : T(i == j ? 1 : 0);
    // R₂[i][c] = conj(L₂[c][i]), R₁[c][j] = conj(L₁[j][c]); both products are zero below the diagonal
    T r = T(0), mk = T(0);
    SOLVERS_UNROLL_4
    for (int c = i; c <= j; ++c) {
      const T r2 = conj(l2[c * w + i]);
      r += r2 * conj(l1[j * w + c]);
      mk += s[i * w + c] * conj(d[c]) * conj(l2[j * w + c]);
    }
    m.r[idx] = conj(d[i]) * r;
    m.k[idx] = mk;
  }
  for (int i = ex.first(); i < w; i += ex.stride()) m.tau[i] = s[i * w + i];
  ex.sync();
  solve_right_upper(ex, w, s, Upper<T>{s, w, true, true}, true);     // V₁ᴴ: unit, V₁ = s's strict lower part
  for (int idx = ex.first(); idx < w * w; idx += ex.stride()) {
    const bool upper = idx / w <= idx % w;
    m.t[idx] = upper ? s[idx] : T(0);
    l2[idx] = m.k[idx];                                                // M
    s[idx] = T(idx / w == idx % w ? -1 : 0);
  }
  ex.sync();
  solve_right_upper(ex, w, s, Upper<T>{l2, w, false, false}, true);
  for (int idx = ex.first(); idx < w * w; idx += ex.stride()) m.k[idx] = s[idx];
}

#pragma nv_exec_check_disable
template <typename T, typename Exec>
__host__ __device__ void run(const Exec& ex, const PanelFactorsArgs& args, T* work, real_t<T> limit) {
  const Views<T> m(args, work);
  if (!orthogonal_enough(ex, m, limit) || !cholesky(ex, m)) return;
  second_pass_top(ex, m);
  lu_with_signs(ex, m);
  outputs(ex, m);
}

}  // namespace panel_factors
}  // namespace solvers
