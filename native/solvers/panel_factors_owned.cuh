// panel_factors.h's w × w part for w <= 64, owner-computes (owner_grid.cuh), in two column
// sweeps and a few products where panel_factors_step.cuh needs five sweeps of several barriers a
// column:
//
//   sweep 1: L₂ = chol(Q₁ᴴQ₁) and X = L₂⁻¹ together (R₂⁻¹ = Xᴴ)
//   products: R₂ R₁, S = Q₁[:w] R₂⁻¹
//   sweep 2: E - S D = V U, and together, one column behind, T = U V₁⁻ᴴ and Z = D U⁻¹
//   products: K = -R₂⁻¹ Z, R_h = Dᴴ (R₂ R₁)
//
// (the same factors as panel_factors_step.cuh's: K = -M⁻¹ with M = U Dᴴ R₂ is -R₂⁻¹ D U⁻¹; R₂ is
// as well-conditioned as Q₁ is orthonormal, so its inverse may be formed). A w < 64 is padded to
// 64 as diag(A, I): every factorization and product keeps the two blocks apart, the sweeps stop
// after column w (what they would do to the padding, the corner never reads), and only the
// w × w corner is written out.
//
// Also the first pass's w × w part for panel_cholqr2.h: sweep 1 on AᴴA, L₁ and R₁⁻¹ out. L X = I
// is solved a column of I at a time (in effect), so |L X - I| <= c u |L| |X|, that is
// |R₁⁻¹ R₁ - I| <= c u |R₁⁻¹| |R₁|: Q₁ = A R₁⁻¹ has Q₁ R₁ = A (I + E) with E of that size.
#pragma once
#include <cstdint>

#include "owner_grid.cuh"
#include "panel_cholqr2.h"
#include "panel_factors_step.cuh"

namespace solvers {
namespace panel_factors {
namespace owned {

using namespace owner_grid;

// Column c's sign d_c = -conj(x)/|x| and pivot 1 + |x| from its diagonal entry x, and its
// multipliers (V's column c) from its entries below.
// (Kept in shared memory for the next round, which would otherwise recompute it: a square root
// and two divisions a thread.)
template <typename T>
struct Sign {
  T d;
  real_t<T> pivot, inverse;
  Sign() = default;
  __host__ __device__ explicit Sign(T x)
      : d(unit_opposite(x)), pivot(real_t<T>(1) + abs_of(x)), inverse(real_t<T>(1) / pivot) {}
  __host__ __device__ T multiplier(T entry) const { return inverse * -(d * entry); }
};

// The shared memory (or host memory) of a call: three kN × kLd matrices, the posts (columns
// and rows of the matrix being factored, T's and Z's columns: kPostWays × kN each) and the
// columns' signs (kN Signs, within 3 kN scalars: a Sign is a scalar and two reals).
constexpr int64_t kWorkspaceElems = 3 * int64_t(kN) * kLd + (4 * kPostWays + 3) * kN;

template <typename T>
struct Workspace {
  static_assert(sizeof(Sign<T>) <= 3 * sizeof(T) && alignof(Sign<T>) <= alignof(T), "the signs' room");
  T *a, *b, *c;
  T *cols, *rows, *t_cols, *z_cols;
  Sign<T>* signs;
  __host__ __device__ explicit Workspace(T* w)
      : a(w), b(w + kN * kLd), c(w + 2 * kN * kLd), cols(w + 3 * kN * kLd), rows(cols + kPostWays * kN),
        t_cols(rows + kPostWays * kN), z_cols(t_cols + kPostWays * kN),
        signs(reinterpret_cast<Sign<T>*>(z_cols + kPostWays * kN)) {}
};

template <typename T>
__host__ __device__ T identity(int i, int j) {
  return T(i == j ? 1 : 0);
}

#pragma nv_exec_check_disable
template <typename Ex>
__host__ __device__ void set_status(const Ex& ex, int32_t* status, int32_t value) {
  ex.each([&](Me me) {
    if (me.id() == 0) *status = value;
  });
}

// Sweep 1: L Lᴴ = g in place (its lower triangle read, the strict upper one left zero) and
// x = L⁻¹ (x = I on entry): round k takes column k of L from the posted column of g and row k
// of L⁻¹ from the posted row of x (by rows: X[k,:] /= L_kk, X[i,:] -= L_ik X[k,:] below it).
// Columns 0..n-1; false where a pivot is not positive.
#pragma nv_exec_check_disable
template <typename T, typename Ex, typename Owned>
__host__ __device__ bool cholesky_with_inverse(const Ex& ex, int n, Owned& g, Owned& x, const Workspace<T>& ws) {
  using R = real_t<T>;
  return sweep(ex, n, [&](Me me, int k) {
    Tile<T>& l = g.of(me);
    Tile<T>& inverse_of_l = x.of(me);
    if (k >= 0) {
      const T *col = post_of(ws.cols, k), *row = post_of(ws.rows, k);
      const R pivot = real_part(col[k]);
      if (!(pivot > R(0))) return false;
      const R root = r_sqrt(pivot), inverse = R(1) / root;
      entries<T>(me, l, [&](int i, int j, T& v) {
        if (j == k) v = i > k ? inverse * v : T(i == k ? root : R(0));
        else if (i > k && j > k) v -= (inverse * col[i]) * conj(inverse * col[j]);
      });
      entries<T, Part::lower>(me, inverse_of_l, [&](int i, int j, T& v) {
        if (i == k) v = inverse * v;
        else if (i > k) v -= (inverse * col[i]) * (inverse * row[j]);
      });
    }
    post_column(me, l, ws.cols, k + 1);
    post_row(me, inverse_of_l, ws.rows, k + 1);
    return true;
  });
}

// Sweep 2: E - S D = V U in place of s (panel_factors_step.cuh's lu_with_signs), D into ws.signs,
// round c from the posted column and row c (the row not yet scaled by later signs: those are
// common factors of later columns, applied when they are reached). One round behind, T = U V₁⁻ᴴ
// (X V₁ᴴ = U) into ws.b and Z = D U⁻¹ (Z U = D) into ws.a (shared memory: at 1024 threads a
// thread has 64 registers, too few for three tiles in complex128), by columns: round c takes T's and Z's column c - 1 out of their later columns
// (V₁ᴴ's row c - 1 from the posted column c - 1; U's row c - 1 is the posted row c - 1 times the
// later signs, which Z's columns take when they are finished), then finishes their column c,
// whose U is now known. Columns 0..n-1; ws.b and ws.a are zero on entry.
#pragma nv_exec_check_disable
template <typename T, typename Ex, typename Owned>
__host__ __device__ void lu_with_signs(const Ex& ex, int n, Owned& s, const Workspace<T>& ws) {
  sweep(ex, n, [&](Me me, int c) {
    Tile<T>& lu = s.of(me);
    if (c >= 0) {
      const T *col = post_of(ws.cols, c), *row = post_of(ws.rows, c);
      const Sign<T> now(col[c]);
      entries<T>(me, lu, [&](int i, int j, T& v) {
        if (j == c) {
          v = i == c ? T(now.pivot) : i < c ? -(now.d * v) : now.multiplier(v);
          if (i == c) ws.signs[c] = now;
        } else if (i > c && j > c) {
          v -= now.multiplier(col[i]) * row[j];
        }
      });
      if (c > 0) {
        const T *before_col = post_of(ws.cols, c - 1), *before_row = post_of(ws.rows, c - 1);
        const T *t_col = post_of(ws.t_cols, c - 1), *z_col = post_of(ws.z_cols, c - 1);
        const Sign<T>& before = ws.signs[c - 1];
        entries_in<T, Part::upper>(me, ws.b, [&](int i, int j, T& v) {
          if (j >= c) v -= t_col[i] * conj(before.multiplier(before_col[j]));
        });
        entries_in<T, Part::upper>(me, ws.a, [&](int i, int j, T& v) {
          if (j >= c) v += z_col[i] * before_row[j];
        });
      }
      entries<T>(me, lu, [&](int i, int j, T& u) {
        if (j != c) return;
        T& tv = ws.b[i * kLd + j];
        tv = (i <= c ? u : T(0)) + tv;
        post_of(ws.t_cols, c)[i] = tv;
      });
      entries_in<T, Part::upper>(me, ws.a, [&](int i, int j, T& zv) {
        if (j == c) zv = now.inverse * (now.d * (identity<T>(i, j) + zv));
      });
      post_column_in(me, ws.a, ws.z_cols, c);
    }
    post_column(me, lu, ws.cols, c + 1);
    post_row(me, lu, ws.rows, c + 1);
    return true;
  });
}

// panel_factors.h's w × w part (w <= kN). *status is 0 on entry (or a failed first pass's,
// panel_cholqr2.h: then nothing is done).
#pragma nv_exec_check_disable
template <typename T, typename Ex>
__host__ __device__ void run(const Ex& ex, const PanelFactorsArgs& args, T* work, real_t<T> limit) {
  if (*args.status != kPanelFactorsDone) return;
  const Workspace<T> ws(work);
  const int w = args.w;
  T* out = static_cast<T*>(args.out);
  const int64_t sq = int64_t(w) * w;
  T *v1 = out, *k = out + sq, *t = out + 2 * sq, *r = out + 3 * sq, *tau = out + 4 * sq;
  typename Ex::template Owned<T> x, y;
  fill<T>(ex, x, Padded<T>{static_cast<const T*>(args.gram), w, T(1), false});
  const bool far = ex.any([&](Me me) {
    bool bad = false;
    entries<T>(me, x.of(me), [&](int i, int j, T& v) { bad = bad || !(abs_of(i == j ? v - T(1) : v) <= limit); });
    return bad;
  });
  if (far) return set_status(ex, args.status, kPanelFactorsNotOrthogonal);
  fill<T>(ex, y, identity<T>);
  if (!cholesky_with_inverse(ex, w, x, y, ws)) return set_status(ex, args.status, kPanelFactorsNotDefinite);
  // Shared matrices, in turn: ws.a L₂, Q₁[:w], then Z; ws.b L₁, then T; ws.c R₂⁻¹ (y's last use
  // comes first: its tile and the products' operands would not fit in complex128's registers).
  put<T>(ex, x, ws.a, kLd, kN);                                                     // L₂
  put<T>(ex, y, ws.c, kLd, kN, true);                                               // R₂⁻¹
  stage<T>(ex, ws.b, Padded<T>{static_cast<const T*>(args.l1), w, T(1), true});     // L₁
  ex.sync();
  ex.each([&](Me me) {   // R₂ R₁ into R_h's place, D to come
    product(me, x.of(me), [&](int i, int c) { return conj(ws.a[c * kLd + i]); },
            [&](int c, int j) { return conj(ws.b[j * kLd + c]); });
  });
  put<T>(ex, x, r, w, w);
  ex.sync();   // L₂ read: Q₁[:w] takes its place
  stage<T>(ex, ws.a, Padded<T>{static_cast<const T*>(args.q1_top), w, T(0), false});
  ex.sync();
  ex.each([&](Me me) {   // S = Q₁[:w] R₂⁻¹
    product(me, x.of(me), [&](int i, int c) { return ws.a[i * kLd + c]; }, [&](int c, int j) { return ws.c[c * kLd + j]; });
  });
  ex.sync();   // Q₁[:w] and L₁ read: Z and T take their places
  stage<T>(ex, ws.a, [](int, int) { return T(0); });
  stage<T>(ex, ws.b, [](int, int) { return T(0); });
  lu_with_signs(ex, w, x, ws);
  ex.each([&](Me me) {
    entries<T>(me, x.of(me), [&](int i, int j, T& lu) {
      if (i >= w || j >= w) return;
      v1[i * w + j] = i > j ? lu : identity<T>(i, j);
      if (i == j) tau[i] = lu;
      t[i * w + j] = ws.b[i * kLd + j];
      r[i * w + j] = conj(ws.signs[i].d) * r[i * w + j];   // this thread's own entries of R₂ R₁
    });
  });
  ex.sync();
  ex.each([&](Me me) {   // K = -R₂⁻¹ Z
    product(me, x.of(me), [&](int i, int c) { return -ws.c[i * kLd + c]; }, [&](int c, int j) { return ws.a[c * kLd + j]; });
  });
  put<T>(ex, x, k, w, w);
}

// The first pass's w × w part (panel_cholqr2.h): L₁ and R₁⁻¹ out, *status set.
#pragma nv_exec_check_disable
template <typename T, typename Ex>
__host__ __device__ void first_factor(const Ex& ex, const FirstFactorArgs& args, T* work) {
  const Workspace<T> ws(work);
  const int w = args.w;
  typename Ex::template Owned<T> x, y;
  fill<T>(ex, x, Padded<T>{static_cast<const T*>(args.gram), w, T(1), false});
  fill<T>(ex, y, identity<T>);
  if (!cholesky_with_inverse(ex, w, x, y, ws)) return set_status(ex, args.status, kPanelFactorsNotDefinite);
  put<T>(ex, x, static_cast<T*>(args.l1), w, w);
  put<T>(ex, y, static_cast<T*>(args.r1_inverse), w, w, true);
  set_status(ex, args.status, kPanelFactorsDone);
}

}  // namespace owned
}  // namespace panel_factors
}  // namespace solvers
