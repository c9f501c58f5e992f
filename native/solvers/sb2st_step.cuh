// One step of the bulge chasing (solvers/sb2st.py: its _chase_python is the reference), written
// once for the host and the GPU. The loops are "each thread takes indices first, first+stride,
// ..." (StepEntries numbers a step's entries for them); on the host one thread takes them all in
// order (HostExec), on the GPU a thread block shares them (DeviceExec) and `sync` is its barrier.
// A value another thread wrote is read only after a sync (a thread reads back its own without
// one), and every thread computes the reflector's scalars from the same shared values in the
// same order, so the device's step is the host's with sums taken in another order.
#pragma once
#include <cmath>
#include <cstdint>

#include "scalar.cuh"
#include "unroll.cuh"

namespace solvers {

// The band under chase: w[c * ld + d] = B[c + d, c] for 0 <= d < ld = 2b (the bulge reaches
// 2b - 1 below the diagonal).
template <typename T>
struct ChaseBand {
  T* w;
  int64_t n;
  int64_t ld;
  int b;
};

// Where the reflectors go (BulgeLayout in solvers/sb2st.py): group index[σ * kmax + k] holds
// column j = s - σ g of sweep s at rows j.., in an h x g row-major block; null v: not kept.
template <typename T>
struct ChaseReflectors {
  T* v;
  T* tau;
  const int64_t* index;
  int64_t kmax;
  int group;
  int height;
};

// A step's scratch: the blocks A (its lower triangle) and D, b x b column-major with leading
// dimension lda (b + 1: no shared-memory bank conflicts); the reflectors of this step and the one
// before (reflector[k % 2] is step k's; scalars[k % 2] its tau); y = D v_prev; x (the column under
// annihilation, then vᴴ D); p (A v, then w); scalars[2] = vᴴ y; 32 entries for each of the two
// block sums; the partial sums of partial_sums.
template <typename T>
struct ChaseSpace {
  T* a;
  T* d;
  T* reflector[2];
  T* y;
  T* x;
  T* p;
  T* scalars;
  T* scratch;
  real_t<T>* real_scratch;
  T* partial;
  int partial_capacity;
  int lda;
};

// Entries of partial sums a step keeps: a thread's share of 2b + 1 rows at 1024 threads, or the
// rows themselves where b is larger (one range a row).
__host__ __device__ inline int chase_partial_capacity(int b) { return 2 * b + 1 > 1024 ? 2 * b + 1 : 1024; }

// Elements of T a ChaseSpace for bandwidth b needs (carve_space lays them out).
__host__ __device__ inline int64_t chase_space_elems(int b) {
  const int64_t lda = b + 1;
  return 2 * lda * b + 5 * int64_t(b) + 4 + 32 + 32 + chase_partial_capacity(b);
}

template <typename T>
__host__ __device__ inline ChaseSpace<T> carve_space(T* base, int b) {
  ChaseSpace<T> sp;
  sp.lda = b + 1;
  sp.a = base;
  sp.d = sp.a + int64_t(sp.lda) * b;
  sp.reflector[0] = sp.d + int64_t(sp.lda) * b;
  sp.reflector[1] = sp.reflector[0] + b;
  sp.y = sp.reflector[1] + b;
  sp.x = sp.y + b;
  sp.p = sp.x + b;
  sp.scalars = sp.p + b;
  sp.scratch = sp.scalars + 4;
  // 32 reals fit in the 32 elements of T left at the end (sizeof(T) >= sizeof(real_t<T>)).
  sp.real_scratch = reinterpret_cast<real_t<T>*>(sp.scratch + 32);
  sp.partial = sp.scratch + 64;
  sp.partial_capacity = chase_partial_capacity(b);
  return sp;
}

// A load of the band, which other thread blocks of the chase write: on the device through L2
// only (a line another SM wrote is never read stale from L1), on the host a plain load.
template <typename T>
__host__ __device__ inline T load_band(const T* p) {
#if defined(__CUDA_ARCH__)
  return load_cg(p);
#else
  return *p;
#endif
}

// The entries a step moves between the band and shared memory, numbered 0 .. count() - 1 so
// that the block's threads share them evenly, laid out for the full width b (a sweep's last step,
// rows < b, leaves the entries past its rows out): first the block left of A (D, b x b, i
// fastest; at step 0 the column under annihilation, b x 1), then A's lower triangle with its
// columns j and b - 1 - j paired into one column of b + 1 entries (consecutive numbers are
// consecutive rows of a column, so a warp's loads of the band coalesce; for an odd b the middle
// column is paired with itself and its second half is no entry). With b a compile-time constant
// every division here is by a constant.
struct StepEntries {
  int b, rows, left_cols;
  __host__ __device__ int left() const { return b * left_cols; }
  __host__ __device__ int count() const { return left() + (b + 1) * ((b + 1) / 2); }
  // Entry p: (i, j) in the left block (returns 1) or in A (returns 2), or no entry (returns 0).
  __host__ __device__ int locate(int p, int& i, int& j) const {
    if (p < left()) {
      i = p % b;
      j = p / b;
      return i < rows ? 1 : 0;
    }
    const int q = p - left(), r = q % (b + 1), pair = q / (b + 1);
    if (r < b - pair) {
      i = pair + r;
      j = pair;
    } else {
      j = b - 1 - pair;
      i = j + r - (b - pair);
      if (j == pair) return 0;
    }
    return i < rows ? 2 : 0;
  }
};

// fetch(e, to) for a thread's share of e < total (first, first + stride, ...), which loads an
// entry and sets `to` to its place in `shared` (or leaves it -1: no entry), then the stores:
// kBatch loads in flight before the stores to shared memory (which the compiler may not move a
// later load of the band past, so one store between two loads would cost a step one L2 round
// trip per entry of its share).
#pragma nv_exec_check_disable
template <typename T, int kBatch, typename Exec, typename Fetch>
__host__ __device__ inline void gather(const Exec& ex, int total, T* shared, Fetch fetch) {
  const int stride = ex.stride();
  for (int base = ex.first(); base < total; base += kBatch * stride) {
    T x[kBatch];
    int to[kBatch];
    SOLVERS_UNROLL
    for (int u = 0; u < kBatch; ++u) {
      to[u] = -1;
      x[u] = base + u * stride < total ? fetch(base + u * stride, to[u]) : T(0);
    }
    SOLVERS_UNROLL
    for (int u = 0; u < kBatch; ++u)
      if (to[u] >= 0) shared[to[u]] = x[u];
  }
}

// Loads in flight per thread while a step gathers its entries: for the kernel built for b = 64,
// a 768-thread block's whole share in float64 (one L2 round trip); for a run-time b fewer, which
// keeps that kernel within 64 registers a thread (1024-thread blocks).
template <typename T, int kB>
constexpr int chase_batch() {
  return kB == 0 ? 4 : sizeof(T) > 8 ? 6 : 9;
}

// The sums Σ_{j < inner} term(i, j) for i < rows, in two halves with a barrier between:
// partial_sums splits each row's sum into ranges of j so that every thread of the block takes one
// (a row's terms one after another on one thread made a step wait out inner dependent
// multiply-adds per product) and keeps the ranges' sums in `partial`; it returns the ranges a row
// has, and row_total(partial, rows, parts, i) then adds row i's in order: the same bits every run
// for one block size.
#pragma nv_exec_check_disable
template <typename T, typename Exec, typename Term>
__host__ __device__ inline int partial_sums(const Exec& ex, int rows, int inner, T* partial, int capacity, Term term) {
  int parts = ex.stride() / rows;
  if (parts > inner) parts = inner;
  if (parts > capacity / rows) parts = capacity / rows;
  if (parts < 1) parts = 1;
  const int chunk = (inner + parts - 1) / parts;
  for (int t = ex.first(); t < parts * rows; t += ex.stride()) {
    const int i = t % rows, j0 = (t / rows) * chunk, j1 = j0 + chunk < inner ? j0 + chunk : inner;
    T acc = T(0);
    SOLVERS_UNROLL_4
    for (int j = j0; j < j1; ++j) acc += term(i, j);
    partial[t] = acc;
  }
  return parts;
}

template <typename T>
__host__ __device__ inline T row_total(const T* partial, int rows, int parts, int i) {
  T acc = partial[i];
  for (int q = 1; q < parts; ++q) acc += partial[q * rows + i];
  return acc;
}

// Steps of sweep s: one per b rows from row s + 1 to n - 1.
__host__ __device__ inline int64_t chase_steps(int64_t n, int b, int64_t s) { return (n - 2 - s) / b + 1; }

// Step k of sweep s (see solvers/sb2st.py for the algorithm: H_{k-1} applied to D from the
// right, H_k formed from D's first column and applied from the left to D and from both sides to
// A); sp.reflector[(k - 1) % 2] and sp.scalars[(k - 1) % 2] hold step k-1's reflector on entry.
// The step may start once sweep s-1 has finished its step k: of what it reads, step k+1 of sweep
// s-1 writes only its late entries (A's last row and the left block's last entry, both in row
// r0 + b - 1: see sb2st.h), which it gathers after the others, once every thread has called
// wait_late(); that waits for step k+1 of sweep s-1 (false: give up, and the step returns false
// having written nothing). On the GPU the gather of the rest then overlaps sweep s-1's step.
// D's two updates are not formed in shared memory: with y = D v_prev and z' = vᴴ D,
//   H_kᴴ (D H_{k-1}) = D - tau_prev y v_prevᴴ - conj(tau) v (z' - tau_prev (vᴴ y) v_prevᴴ),
// written as D goes back to the band, so a step makes two passes of sums (y; then A v, z' and
// vᴴ y in one) between its gather and its store. kB: the bandwidth as a compile-time constant
// (its index arithmetic then needs no division), or 0 for band.b at run time. The block's work
// is laid out for b rows even where the step has fewer (a sweep's last).
#pragma nv_exec_check_disable
template <typename T, int kB = 0, typename Exec, typename WaitLate>
__host__ __device__ bool chase_step(const Exec& ex, const ChaseBand<T>& band, const ChaseReflectors<T>& out,
                                    const ChaseSpace<T>& sp, int64_t s, int64_t k, WaitLate wait_late) {
  using R = real_t<T>;
  const int b = kB > 0 ? kB : band.b;
  const int64_t ld = kB > 0 ? 2 * kB : band.ld;
  const int64_t r0 = s + 1 + k * b;
  const int rows = int(band.n - r0 < b ? band.n - r0 : b);
  const int64_t c0 = r0 - b;
  const int lda = sp.lda;
  T* const a = sp.a;
  T* const d = sp.d;
  T* const v = k & 1 ? sp.reflector[1] : sp.reflector[0];  // a select: an index would put sp in local memory
  const T* const v_prev = k & 1 ? sp.reflector[0] : sp.reflector[1];
  const T tau_prev = sp.scalars[(k + 1) & 1];
  T* const y = sp.y;
  T* const x = sp.x;
  T* const p = sp.p;
  const int first = ex.first(), stride = ex.stride();
  // At step 0 the "left block" is the column to annihilate, B[r0:r0+rows, s], gathered into x;
  // later it is D = B[r0:r0+rows, c0:c0+b]. Entry (i, j) of either lies at j (ld - 1) + i from
  // its block's base in the band (A's only for i >= j; its diagonal taken real, as the
  // Hermitian diagonal is: the chase's reference never reads its imaginary part).
  const StepEntries entries{b, rows, k == 0 ? 1 : b};
  const int jump = int(ld - 1);
  T* const a_band = band.w + r0 * ld;
  T* const left_band = band.w + (k == 0 ? s * ld + 1 : c0 * ld + b);
  const int left_to = int((k == 0 ? x : d) - a);  // the left block's place, from a
  const int left_last = entries.left_cols - 1;
  gather<T, chase_batch<T, kB>()>(ex, entries.count(), a, [&](int e, int& to) {
    int i, j;
    const int where = entries.locate(e, i, j);
    if (where == 0 || (i == b - 1 && (where == 2 || j == left_last))) return T(0);  // none, or late
    to = (where == 2 ? 0 : left_to) + i + j * lda;
    const T value = load_band(&(where == 2 ? a_band : left_band)[j * jump + i]);
    return where == 2 && i == j ? T(real_part(value)) : value;
  });
  if (!wait_late()) return false;
  if (rows == b) {  // the late entries: A's row b-1 (threads j < b), then the left block's (b-1, last)
    for (int j = first; j <= b; j += stride) {
      if (j < b) {
        const T value = load_band(&a_band[j * jump + b - 1]);
        a[b - 1 + j * lda] = j == b - 1 ? T(real_part(value)) : value;
      } else {
        a[left_to + b - 1 + left_last * lda] = load_band(&left_band[left_last * jump + b - 1]);
      }
    }
  }
  ex.sync();
  if (k > 0) {  // y = D v_prev; x = (D H_{k-1})[:, 0], the column to annihilate
    const int parts = partial_sums<T>(ex, b, b, sp.partial, sp.partial_capacity,
                                      [&](int i, int j) { return d[i + j * lda] * v_prev[j]; });
    ex.sync();
    for (int i = first; i < rows; i += stride) {
      const T yi = row_total(sp.partial, b, parts, i);
      y[i] = yi;
      x[i] = d[i] - tau_prev * (yi * conj(v_prev[0]));
    }
  }

  // The reflector (larfg's conventions: Hᴴ x = beta e₁, beta real; H = I when x[1:] = 0 and x[0]
  // real). A thread reads back the x[i] it wrote, and x[0] after the sum's barrier.
  R part = R(0);
  for (int i = first; i < rows; i += stride)
    if (i > 0) part += abs2(x[i]);
  const R xnorm = r_sqrt(ex.sum(part, sp.real_scratch));
  const T alpha = x[0];
  const bool trivial = xnorm == R(0) && imag_part(alpha) == R(0);
  const R norm = r_hypot(abs_of(alpha), xnorm);
  const R beta = -r_copysign(norm, real_part(alpha));
  const T tau = trivial ? T(0) : (R(1) / beta) * (T(beta) - alpha);
  const T scale = trivial ? T(1) : reciprocal(alpha - T(beta));
  const R beta_out = trivial ? real_part(alpha) : beta;
  for (int i = first; i < b; i += stride) v[i] = i == 0 ? T(1) : i < rows ? x[i] * scale : T(0);
  ex.sync();

  // One pass of sums: p = A v (rows 0 .. b-1; A's upper triangle is its lower one's conjugate)
  // and, past step 0, z' = vᴴ D (rows b .. 2b-1) and vᴴ y (row 2b). Entries past the step's
  // rows were never loaded: their terms are zero by selection.
  const int sums = k > 0 ? 2 * b + 1 : b;
  const int parts = partial_sums<T>(ex, sums, b, sp.partial, sp.partial_capacity, [&](int i, int j) {
    if (j >= rows) return T(0);
    if (i >= b) return conj(v[j]) * (i == 2 * b ? y[j] : d[j + (i - b) * lda]);
    const bool lower = i >= j;
    const T aij = a[lower ? i + j * lda : j + i * lda];
    return (lower ? aij : conj(aij)) * v[j];
  });
  ex.sync();
  T dot = T(0);  // pᴴ v, so that wᴴ v = conj(tau) pᴴ v for w = tau p
  for (int i = first; i < sums; i += stride) {
    const T total = row_total(sp.partial, sums, parts, i);
    if (i < rows) {
      p[i] = total;
      dot += conj(total) * v[i];
    } else if (i >= b && i < 2 * b) {
      x[i - b] = total;
    } else if (i == 2 * b) {
      sp.scalars[2] = total;
    }
  }
  dot = ex.sum(dot, sp.scratch);
  const T coef = R(0.5) * (tau * (conj(tau) * dot));
  for (int i = first; i < rows; i += stride) p[i] = tau * p[i] - coef * v[i];  // w, from this thread's p[i]
  ex.sync();

  // A -= v wᴴ + w vᴴ (lower), D's two updates (column 0 becomes beta e₁) or the annihilated
  // column, back to the band; the reflector.
  const T ctau = conj(tau);
  const T tau_vhy = k > 0 ? tau_prev * sp.scalars[2] : T(0);
  for (int e = first; e < entries.count(); e += stride) {
    int i, j;
    const int where = entries.locate(e, i, j);
    if (where == 2) {
      const T value = a[i + j * lda] - (v[i] * conj(p[j]) + p[i] * conj(v[j]));
      a_band[j * jump + i] = i == j ? T(real_part(value)) : value;
    } else if (where == 1) {
      T value = i == 0 ? T(beta_out) : T(0);
      if (k > 0 && j > 0) {
        const T z = x[j] - tau_vhy * conj(v_prev[j]);
        value = d[i + j * lda] - tau_prev * (y[i] * conj(v_prev[j])) - ctau * (v[i] * z);
      }
      left_band[j * jump + i] = value;
    }
  }
  if (out.v != nullptr) {
    const int64_t sigma = s / out.group;
    const int jg = int(s - sigma * out.group);
    const int64_t at = out.index[sigma * out.kmax + k];
    T* block = out.v + at * int64_t(out.height) * out.group;
    for (int i = first; i < rows; i += stride) block[int64_t(jg + i) * out.group + jg] = v[i];
    if (first == 0) out.tau[at * out.group + jg] = tau;
  }
  if (first == 0) sp.scalars[k & 1] = tau;
  ex.sync();
  return true;
}

}  // namespace solvers
