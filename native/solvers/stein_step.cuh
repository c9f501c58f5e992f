// Selected eigenpairs of a real symmetric tridiagonal T (diagonal d, off-diagonal e), written once
// for the host and the GPU (stein.h): eigenvalues by multisection, LAPACK dstebz's bisection with
// kLanes points per pass instead of one, and eigenvectors by inverse iteration, LAPACK dstein's
// (dlagtf's pivoted LU of T - λI, dlagts's perturbed solve, the same scaling and stopping rule)
// without its reorthogonalization inside clusters: the caller orthonormalizes the vectors of a
// group together afterwards (solvers/stein.py).
//
// Vectors are stored element-major: element i of vector j of a batch of `ld` vectors is at
// [i * ld + j], so that a GPU thread per vector reads and writes whole lines across its warp.
//
// Every product that meets a sum is an explicit fma: nvcc would contract it on the device and the
// host compiler would not, and with fma on both the device's results are the host's bit for bit
// (IEEE division and square root on both), which the GPU tests check against the host's.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "unroll.cuh"

namespace solvers {
namespace stein {

constexpr int kLanes = 32;       // points per multisection pass (a warp's lanes on the GPU)
constexpr int kMaxPasses = 80;   // a pass narrows 33-fold; 80 passes cover any double interval
constexpr int kMaxIterations = 5;    // dstein's MAXITS
constexpr int kExtraIterations = 2;  // dstein's EXTRA: iterations after the stopping criterion holds
// The loops over a vector's n elements are chains of dependent steps; a GPU thread issues its
// loads in order and waits for each at its first use, so each chunk's loads are issued together
// before its steps (a loop that loads and stores through one pointer would otherwise wait one
// memory round trip per element: the compiler cannot move a load above a store it may alias).
constexpr int kChunk = 8;

// The number of eigenvalues of T below x (dlaebz's Sturm count: a pivot smaller than pivmin is
// taken as -pivmin). e2: e squared.
__host__ __device__ inline int64_t sturm_count(const double* d, const double* e2, int64_t n, double x,
                                               double pivmin) {
  double q = d[0] - x;
  if (fabs(q) < pivmin) q = -pivmin;
  int64_t count = q <= 0;
  for (int64_t i = 1; i < n; ++i) {
    q = d[i] - e2[i - 1] / q - x;
    if (fabs(q) < pivmin) q = -pivmin;
    count += q <= 0;
  }
  return count;
}

// Point `lane` of a pass over (lo, hi): the interval cut into kLanes + 1 equal parts.
__host__ __device__ inline double pass_point(double lo, double hi, int lane) {
  return fma(hi - lo, double(lane + 1) / double(kLanes + 1), lo);
}

// dstebz's convergence test: [lo, hi] narrower than abstol, pivmin or two ulps of its ends.
__host__ __device__ inline bool converged(double lo, double hi, double abstol, double pivmin) {
  return hi - lo < fmax(fmax(abstol, pivmin), 2 * DBL_EPSILON * fmax(fabs(lo), fabs(hi)));
}

// One pass's verdict: `first` is the first lane whose point has at least `index` eigenvalues
// below it (kLanes: none), `at` that lane's point and `before` the point of the lane before it.
// Narrows [lo, hi] to the part that holds eigenvalue `index`; false once it no longer narrows.
__host__ __device__ inline bool narrow(int first, double at, double before, double& lo, double& hi) {
  const double new_lo = first == 0 ? lo : before, new_hi = first == kLanes ? hi : at;
  const bool narrower = new_lo > lo || new_hi < hi;
  lo = new_lo;
  hi = new_hi;
  return narrower;
}

// A start vector's entry in (-1, 1), the same for (vector, element) on every rank and device.
__host__ __device__ inline double start_entry(uint64_t vector, uint64_t element) {
  uint64_t z = (vector << 32 ^ element) + 0x9E3779B97F4A7C15ull;  // splitmix64
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(int64_t(z >> 11) - (int64_t(1) << 52)) * (1.0 / double(int64_t(1) << 52));
}

// One vector's storage in a batch (element-major, see above).
struct VectorView {
  double* a;        // U's diagonal
  double* r;        // its reciprocals: the back substitution's chain multiplies instead of dividing
  double* b;        // U's first superdiagonal
  double* u2;       // U's second superdiagonal (fill-in of row interchanges)
  double* l;        // L's multipliers
  uint8_t* swap;    // 1 where rows k, k+1 were interchanged
  double* y;        // the iterate
  int64_t ld;       // vectors in the batch: the stride between elements
  __host__ __device__ double& at(double* p, int64_t i) const { return p[i * ld]; }
  __host__ __device__ uint8_t& at(uint8_t* p, int64_t i) const { return p[i * ld]; }
};

// dlagtf: P (T - λI) = L U with partial pivoting, into `v`; the start vector into v.y. Returns
// dlagts's tolerance (its EPS, the unit roundoff, times the largest entry of U), and the start
// vector's largest |entry| in `ymax`.
__host__ __device__ inline double factor(const double* d, const double* e, int64_t n, double lambda,
                                         uint64_t vector, const VectorView& v, double& ymax) {
  double a_cur = d[0] - lambda;
  double b_cur = n > 1 ? e[0] : 0.0;
  double scale1 = fabs(a_cur) + fabs(b_cur);
  double umax = 0, y0 = start_entry(vector, 0);
  ymax = fabs(y0);
  v.at(v.y, 0) = y0;
  for (int64_t k0 = 0; k0 + 1 < n; k0 += kChunk) {
    double dn[kChunk], en[kChunk + 1];  // d[k + 1], e[k] of the chunk's steps k, and e[k + 1] of its last
    SOLVERS_UNROLL
    for (int t = 0; t <= kChunk; ++t) {
      const int64_t k = k0 + t;
      if (t < kChunk) dn[t] = k + 1 < n ? d[k + 1] : 0.0;
      en[t] = k + 1 < n ? e[k] : 0.0;
    }
    SOLVERS_UNROLL
    for (int t = 0; t < kChunk; ++t) {
      const int64_t k = k0 + t;
      if (k + 1 >= n) break;
      double a_next = dn[t] - lambda;
      const double ek = en[t], e_next = k + 2 < n ? en[t + 1] : 0.0;
      double b_next = e_next, u2 = 0, l = 0;
      uint8_t swapped = 0;
      const double scale2 = fabs(ek) + fabs(a_next) + fabs(e_next);
      const double piv1 = a_cur == 0 ? 0.0 : fabs(a_cur) / scale1;
      if (ek == 0) {
        scale1 = scale2;
      } else if (fabs(ek) / scale2 <= piv1) {
        scale1 = scale2;
        l = ek / a_cur;
        a_next = fma(-l, b_cur, a_next);
      } else {
        swapped = 1;
        l = a_cur / ek;
        const double old_next = a_next;
        a_next = fma(-l, old_next, b_cur);
        u2 = e_next;
        b_next = -l * u2;
        a_cur = ek;
        b_cur = old_next;
      }
      v.at(v.a, k) = a_cur;
      v.at(v.r, k) = 1 / a_cur;
      v.at(v.b, k) = b_cur;
      v.at(v.u2, k) = u2;
      v.at(v.l, k) = l;
      v.at(v.swap, k) = swapped;
      umax = fmax(umax, fmax(fabs(a_cur), fmax(fabs(b_cur), fabs(u2))));
      const double yk = start_entry(vector, uint64_t(k + 1));
      ymax = fmax(ymax, fabs(yk));
      v.at(v.y, k + 1) = yk;
      a_cur = a_next;
      b_cur = b_next;
    }
  }
  v.at(v.a, n - 1) = a_cur;
  v.at(v.r, n - 1) = 1 / a_cur;
  umax = fmax(umax, fabs(a_cur));
  constexpr double kRoundoff = DBL_EPSILON / 2;  // dlamch('E')
  const double tol = umax * kRoundoff;
  return tol == 0 ? kRoundoff : tol;
}

// dlagts's quotient temp / ak where ak is small: a pivot that would overflow it is perturbed by
// growing multiples of tol (away from zero), a subnormal one scaled up with temp first.
__host__ __device__ inline double perturbed_quotient(double temp, double ak, double tol) {
  constexpr double sfmin = DBL_MIN, bignum = 1 / DBL_MIN;
  double pert = copysign(tol, ak);
  for (;;) {
    const double absak = fabs(ak);
    if (absak < 1) {
      if (absak < sfmin) {
        if (absak == 0 || fabs(temp) * sfmin > absak) {
          ak += pert;
          pert *= 2;
          continue;
        }
        temp *= bignum;
        ak *= bignum;
      } else if (fabs(temp) > absak * bignum) {
        ak += pert;
        pert *= 2;
        continue;
      }
    }
    return temp / ak;
  }
}

// dlagts (job -1): y <- U⁻¹ L⁻¹ P (scale * y), each pivot that would overflow the quotient
// perturbed by growing multiples of tol. Returns max |y| after the solve, its place in `jmax`.
// A quotient is y times the pivot's reciprocal wherever that stays below dlagts's overflow bound
// (a division is many dependent steps on the GPU, a multiplication one); elsewhere (a zero or
// subnormal pivot, a quotient that would overflow) dlagts's own steps on the pivot.
__host__ __device__ inline double solve(int64_t n, double scale, double tol, const VectorView& v, int64_t& jmax) {
  double prev = v.at(v.y, 0) * scale;
  v.at(v.y, 0) = prev;
  for (int64_t k0 = 1; k0 < n; k0 += kChunk) {  // P and L
    double ys[kChunk], ls[kChunk];
    uint8_t swaps[kChunk];
    SOLVERS_UNROLL
    for (int t = 0; t < kChunk; ++t) {
      const int64_t k = k0 + t;
      ys[t] = k < n ? v.at(v.y, k) : 0.0;
      ls[t] = k < n ? v.at(v.l, k - 1) : 0.0;
      swaps[t] = k < n ? v.at(v.swap, k - 1) : 0;
    }
    SOLVERS_UNROLL
    for (int t = 0; t < kChunk; ++t) {
      const int64_t k = k0 + t;
      if (k >= n) break;
      double yk = ys[t] * scale;
      if (swaps[t]) {
        v.at(v.y, k - 1) = yk;
        yk = fma(-ls[t], yk, prev);
      } else {
        yk = fma(-ls[t], prev, yk);
      }
      v.at(v.y, k) = yk;
      prev = yk;
    }
  }
  constexpr double bignum = 1 / DBL_MIN;
  double y1 = 0, y2 = 0, ymax = -1;  // y[k+1], y[k+2] as solved
  for (int64_t k1 = n - 1; k1 >= 0; k1 -= kChunk) {  // U, from the last row up
    double ys[kChunk], bs[kChunk], u2s[kChunk], rs[kChunk];
    SOLVERS_UNROLL
    for (int t = 0; t < kChunk; ++t) {
      const int64_t k = k1 - t;
      ys[t] = k >= 0 ? v.at(v.y, k) : 0.0;
      bs[t] = k >= 0 && k + 1 < n ? v.at(v.b, k) : 0.0;
      u2s[t] = k >= 0 && k + 2 < n ? v.at(v.u2, k) : 0.0;
      rs[t] = k >= 0 ? v.at(v.r, k) : 0.0;
    }
    SOLVERS_UNROLL
    for (int t = 0; t < kChunk; ++t) {
      const int64_t k = k1 - t;
      if (k < 0) break;
      double temp = ys[t];
      if (k + 1 < n) temp = fma(-bs[t], y1, temp);
      if (k + 2 < n) temp = fma(-u2s[t], y2, temp);
      double yk = temp * rs[t];
      if (!(fabs(rs[t]) <= bignum && fabs(yk) <= bignum)) yk = perturbed_quotient(temp, v.at(v.a, k), tol);
      v.at(v.y, k) = yk;
      if (fabs(yk) >= ymax) {  // the first place of the largest, as idamax
        ymax = fabs(yk);
        jmax = k;
      }
      y2 = y1;
      y1 = yk;
    }
  }
  return ymax;
}

// dstein's iteration for one eigenvalue: returns the iterations taken, or -1 if the stopping
// criterion never held in kMaxIterations (the vector is then the last iterate, as dstein's).
// `onenrm`: ‖T‖₁. Leaves v.y the unit vector whose largest entry is positive.
__host__ __device__ inline int inverse_iteration(const double* d, const double* e, int64_t n, double lambda,
                                                 uint64_t vector, double onenrm, const VectorView& v) {
  double ymax = 0;
  const double tol = factor(d, e, n, lambda, vector, v, ymax);
  const double u_last = fabs(v.at(v.a, n - 1));
  const double stop = sqrt(0.1 / double(n));  // dstein's DTPCRT
  int checks = 0, iterations = 0;
  bool ok = false;
  int64_t jmax = 0;
  while (iterations < kMaxIterations) {
    ++iterations;
    const double scale = double(n) * onenrm * fmax(DBL_EPSILON, u_last) / ymax;
    ymax = solve(n, scale, tol, v, jmax);
    if (ymax < stop) continue;
    if (++checks >= kExtraIterations + 1) {
      ok = true;
      break;
    }
  }
  // Unit 2-norm, largest entry positive (dnrm2 of the vector scaled by its largest entry first).
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double t = v.at(v.y, i) / ymax;
    sum = fma(t, t, sum);
  }
  double scale = 1 / (ymax * sqrt(sum));
  if (v.at(v.y, jmax) < 0) scale = -scale;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    double ys[kChunk];
    SOLVERS_UNROLL
    for (int t = 0; t < kChunk; ++t) ys[t] = i0 + t < n ? v.at(v.y, i0 + t) : 0.0;
    SOLVERS_UNROLL
    for (int t = 0; t < kChunk; ++t)
      if (i0 + t < n) v.at(v.y, i0 + t) = ys[t] * scale;
  }
  return ok ? iterations : -1;
}

}  // namespace stein
}  // namespace solvers
