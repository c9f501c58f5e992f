// panel_factors.h's w × w part for w <= 64, owner-computes (owner_grid.cuh): the same phases as
// panel_factors_step.cuh (whose loops share out flat indices and need several barriers a column),
// with every matrix being factored or solved for held by its owners and one barrier a column.
// A w < 64 is padded to 64 as diag(A, I): every factorization and solve then keeps the two
// blocks apart, the padding's factors are I (or 0), and only the w × w corner is written out.
// Also the first pass's w × w part for panel_cholqr2.h: L₁ = chol(AᴴA) and R₁⁻¹ = L₁⁻ᴴ.
#pragma once
#include <cstdint>

#include "owner_grid.cuh"
#include "panel_cholqr2.h"
#include "panel_factors_step.cuh"

namespace solvers {
namespace panel_factors {
namespace owned {

using namespace owner_grid;

// The shared memory (or host memory) of a call: three kN × kLd matrices, two sweeps' posts
// (columns, then rows or a second solve's columns) and D.
constexpr int64_t kWorkspaceElems = 3 * int64_t(kN) * kLd + 5 * kN;

template <typename T>
struct Workspace {
  T *a, *b, *c;         // L (then M), L₁, V\U
  T *posts, *posts2, *d;
  __host__ __device__ explicit Workspace(T* w)
      : a(w), b(w + kN * kLd), c(w + 2 * kN * kLd), posts(w + 3 * kN * kLd), posts2(posts + 2 * kN),
        d(posts2 + 2 * kN) {}
};

// Entry (i, j) of the row-major w × w matrix p read as the kN × kN matrix diag(p, pad · I),
// with only its lower triangle where `lower`.
template <typename T>
struct Padded {
  const T* p;
  int w;
  T pad;
  bool lower;
  __host__ __device__ T operator()(int i, int j) const {
    if (lower && j > i) return T(0);
    return i < w && j < w ? p[int64_t(i) * w + j] : T(i == j ? pad : T(0));
  }
};

// value(i, j, entry) of x's entries with i, j < n into dst (row stride ld).
#pragma nv_exec_check_disable
template <typename T, typename Ex, typename Owned, typename F>
__host__ __device__ void put(const Ex& ex, Owned& x, T* dst, int64_t ld, int n, F&& value) {
  ex.each([&](Me me) {
    entries<T>(me, x.of(me), [&](int i, int j, T& v) {
      if (i < n && j < n) dst[i * ld + j] = value(i, j, v);
    });
  });
}

#pragma nv_exec_check_disable
template <typename T, typename Ex, typename Owned>
__host__ __device__ void put_shared(const Ex& ex, Owned& x, T* dst) {
  put<T>(ex, x, dst, kLd, kN, [](int, int, T v) { return v; });
}

#pragma nv_exec_check_disable
template <typename Ex>
__host__ __device__ void set_status(const Ex& ex, int32_t* status, int32_t value) {
  ex.each([&](Me me) {
    if (me.id() == 0) *status = value;
  });
}

// Where the thread owns column (row) j < kN, its entries there into the posts for j.
template <typename T>
__host__ __device__ void post_column(Me me, Tile<T>& t, T* posts, int j) {
  entries<T>(me, t, [&](int i, int c, T& v) {
    if (c == j) post_of(posts, j)[i] = v;
  });
}
template <typename T>
__host__ __device__ void post_row(Me me, Tile<T>& t, T* posts, int j) {
  entries<T>(me, t, [&](int i, int c, T& v) {
    if (i == j) post_of(posts, j)[c] = v;
  });
}

// t += lhs · rhs over the inner index 0..kN-1 (lhs(i, c), rhs(c, j)): the thread's 4 + 4
// operands of each c loaded once for its 16 products; c in order, so the sums are the same bits
// wherever they run on the same machine.
#pragma nv_exec_check_disable
template <typename T, typename L, typename R>
__host__ __device__ void add_product(Me me, Tile<T>& t, L&& lhs, R&& rhs) {
  for (int c = 0; c < kN; ++c) {
    T x[kTile], y[kTile];
    SOLVERS_UNROLL
    for (int a = 0; a < kTile; ++a) x[a] = lhs(me.row(a), c);
    SOLVERS_UNROLL
    for (int b = 0; b < kTile; ++b) y[b] = rhs(c, me.col(b));
    SOLVERS_UNROLL
    for (int a = 0; a < kTile; ++a) {
      SOLVERS_UNROLL
      for (int b = 0; b < kTile; ++b) t.v[a][b] += x[a] * y[b];
    }
  }
}

// L Lᴴ = x in place (the lower triangle read, the strict upper one left zero), right-looking;
// false where a pivot is not positive.
#pragma nv_exec_check_disable
template <typename T, typename Ex, typename Owned>
__host__ __device__ bool cholesky(const Ex& ex, Owned& x, T* posts) {
  using R = real_t<T>;
  return sweep(ex, kN, [&](Me me, int k) {
    Tile<T>& t = x.of(me);
    if (k >= 0) {
      const T* col = post_of(posts, k);
      const R pivot = real_part(col[k]);
      if (!(pivot > R(0))) return false;
      const R root = r_sqrt(pivot), inverse = R(1) / root;
      entries<T>(me, t, [&](int i, int j, T& v) {
        if (j == k) v = i > k ? inverse * v : T(i == k ? root : R(0));
        else if (i > k && j > k) v -= (inverse * col[i]) * conj(inverse * col[j]);
      });
    }
    post_column(me, t, posts, k + 1);
    return true;
  });
}

// X U = B in place of x, U upper (Upper over a kLd-strided matrix): column j of X, posted, taken
// out of the later columns, then column j + 1 divided by its diagonal and posted. Two systems
// share a sweep's barriers by calling this for each in one step.
template <typename T>
__host__ __device__ void solve_step(Me me, Tile<T>& t, T* posts, int j, const Upper<T>& u) {
  if (j >= 0) {
    const T* col = post_of(posts, j);
    entries<T>(me, t, [&](int i, int c, T& v) {
      if (c > j) v -= col[i] * u.at(j, c);
    });
  }
  if (j + 1 < kN && !u.unit) {
    const T inverse = u.inverse_diagonal(j + 1);
    entries<T>(me, t, [&](int, int c, T& v) {
      if (c == j + 1) v = v * inverse;
    });
  }
  post_column(me, t, posts, j + 1);
}

#pragma nv_exec_check_disable
template <typename T, typename Ex, typename Owned>
__host__ __device__ void solve(const Ex& ex, Owned& x, T* posts, const Upper<T>& u) {
  sweep(ex, kN, [&](Me me, int j) {
    solve_step(me, x.of(me), posts, j, u);
    return true;
  });
}

// E - S D = V U in place of s (panel_factors_step.cuh's lu_with_signs), D into d: column c's
// sign and pivot from its posted diagonal, its multipliers from the posted column, the trailing
// update from the posted row (not yet scaled by later signs: those are common factors of later
// columns, applied when they are reached).
#pragma nv_exec_check_disable
template <typename T, typename Ex, typename Owned>
__host__ __device__ void lu_with_signs(const Ex& ex, Owned& s, const Workspace<T>& ws) {
  using R = real_t<T>;
  sweep(ex, kN, [&](Me me, int c) {
    Tile<T>& t = s.of(me);
    if (c >= 0) {
      const T *col = post_of(ws.posts, c), *row = post_of(ws.posts2, c);
      const T x = col[c], dc = unit_opposite(x);
      const R pivot = R(1) + abs_of(x), inverse = R(1) / pivot;
      entries<T>(me, t, [&](int i, int j, T& v) {
        if (j == c) {
          v = i == c ? T(pivot) : i < c ? -(dc * v) : inverse * -(dc * v);
          if (i == c) ws.d[c] = dc;
        } else if (i > c && j > c) {
          v -= (inverse * -(dc * col[i])) * row[j];
        }
      });
    }
    post_column(me, t, ws.posts, c + 1);
    post_row(me, t, ws.posts2, c + 1);
    return true;
  });
}

// From V\U in s: V₁ and tau out, R_h = Dᴴ R₂ R₁ out (R₂ = L₂ᴴ in ws.a, R₁ = L₁ᴴ in ws.b), M =
// U Dᴴ R₂ into ws.a; then, in one sweep, T = U V₁⁻ᴴ and K = -M⁻¹ out.
#pragma nv_exec_check_disable
template <typename T, typename Ex, typename Owned>
__host__ __device__ void outputs(const Ex& ex, const PanelFactorsArgs& args, Owned& s, const Workspace<T>& ws) {
  const int w = args.w;
  T* out = static_cast<T*>(args.out);
  const int64_t sq = int64_t(w) * w;
  T *v1 = out, *k = out + sq, *t = out + 2 * sq, *r = out + 3 * sq, *tau = out + 4 * sq;
  put<T>(ex, s, v1, w, w, [&](int i, int j, T v) {
    if (i == j) tau[i] = v;
    return i > j ? v : T(i == j ? 1 : 0);
  });
  put_shared<T>(ex, s, ws.c);
  ex.sync();
  Owned x;
  fill<T>(ex, x, [](int, int) { return T(0); });
  ex.each([&](Me me) {
    add_product(me, x.of(me), [&](int i, int c) { return conj(ws.a[c * kLd + i]); },
                [&](int c, int j) { return conj(ws.b[j * kLd + c]); });
  });
  put<T>(ex, x, r, w, w, [&](int i, int, T v) { return conj(ws.d[i]) * v; });
  fill<T>(ex, x, [](int, int) { return T(0); });
  ex.each([&](Me me) {
    add_product(me, x.of(me), [&](int i, int c) { return c >= i ? ws.c[i * kLd + c] * conj(ws.d[c]) : T(0); },
                [&](int c, int j) { return conj(ws.a[j * kLd + c]); });
  });
  ex.sync();  // L₂ read: M takes its place
  put_shared<T>(ex, x, ws.a);
  Owned& kx = s;
  fill<T>(ex, x, [&](int i, int j) { return i <= j ? ws.c[i * kLd + j] : T(0); });
  fill<T>(ex, kx, [](int i, int j) { return T(i == j ? -1 : 0); });
  ex.sync();
  const Upper<T> v1h{ws.c, kLd, true, true}, m{ws.a, kLd, false, false};
  sweep(ex, kN, [&](Me me, int j) {
    solve_step(me, x.of(me), ws.posts, j, v1h);
    solve_step(me, kx.of(me), ws.posts2, j, m);
    return true;
  });
  put<T>(ex, x, t, w, w, [](int, int, T v) { return v; });
  put<T>(ex, kx, k, w, w, [](int, int, T v) { return v; });
}

// panel_factors.h's w × w part (w <= kN). *status is 0 on entry (or a failed first pass's,
// panel_cholqr2.h: then nothing is done).
#pragma nv_exec_check_disable
template <typename T, typename Ex>
__host__ __device__ void run(const Ex& ex, const PanelFactorsArgs& args, T* work, real_t<T> limit) {
  if (*args.status != kPanelFactorsDone) return;
  const Workspace<T> ws(work);
  const int w = args.w;
  typename Ex::template Owned<T> g;
  fill<T>(ex, g, Padded<T>{static_cast<const T*>(args.gram), w, T(1), false});
  const bool far = ex.any([&](Me me) {
    bool bad = false;
    entries<T>(me, g.of(me), [&](int i, int j, T& v) { bad = bad || !(abs_of(i == j ? v - T(1) : v) <= limit); });
    return bad;
  });
  if (far) return set_status(ex, args.status, kPanelFactorsNotOrthogonal);
  if (!cholesky(ex, g, ws.posts)) return set_status(ex, args.status, kPanelFactorsNotDefinite);
  put_shared<T>(ex, g, ws.a);
  const Padded<T> l1{static_cast<const T*>(args.l1), w, T(1), true};
  ex.each([&](Me me) {
    entries<T>(me, g.of(me), [&](int i, int j, T&) { ws.b[i * kLd + j] = l1(i, j); });
  });
  fill<T>(ex, g, Padded<T>{static_cast<const T*>(args.q1_top), w, T(0), false});   // S = Q₁[:w] L₂⁻ᴴ
  ex.sync();
  solve(ex, g, ws.posts, Upper<T>{ws.a, kLd, true, false});
  lu_with_signs(ex, g, ws);
  outputs(ex, args, g, ws);
}

// The first pass's w × w part (panel_cholqr2.h): L₁ and R₁⁻¹ out, *status set.
#pragma nv_exec_check_disable
template <typename T, typename Ex>
__host__ __device__ void first_factor(const Ex& ex, const FirstFactorArgs& args, T* work) {
  const Workspace<T> ws(work);
  const int w = args.w;
  typename Ex::template Owned<T> x;
  fill<T>(ex, x, Padded<T>{static_cast<const T*>(args.gram), w, T(1), false});
  if (!cholesky(ex, x, ws.posts)) return set_status(ex, args.status, kPanelFactorsNotDefinite);
  put<T>(ex, x, static_cast<T*>(args.l1), w, w, [](int, int, T v) { return v; });
  put_shared<T>(ex, x, ws.a);
  fill<T>(ex, x, [](int i, int j) { return T(i == j ? 1 : 0); });
  ex.sync();
  solve(ex, x, ws.posts, Upper<T>{ws.a, kLd, true, false});    // X L₁ᴴ = I
  put<T>(ex, x, static_cast<T*>(args.r1_inverse), w, w, [](int, int, T v) { return v; });
  set_status(ex, args.status, kPanelFactorsDone);
}

}  // namespace owned
}  // namespace panel_factors
}  // namespace solvers
