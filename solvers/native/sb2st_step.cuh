// One step of the bulge chasing (solvers/sb2st.py: its _chase_python is the reference), written
// once for the host and the GPU. The loops are "each thread takes indices first, first+stride,
// ..." (Grid2 for the (i, j) of a block, i fastest); on the host one thread takes them all in
// order (HostExec), on the GPU a thread block shares them (DeviceExec) and `sync` is its barrier. Every value a later loop reads was written
// before a sync, and every thread computes the reflector's scalars from the same shared values
// in the same order, so the device's step is the host's with sums taken in another order.
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

// A step's scratch: the blocks A (rows x rows, its lower triangle) and D (rows x b), column-major
// with leading dimension lda (b + 1: no shared-memory bank conflicts), vectors of b, the previous
// step's reflector (v_prev, scalars[0] = its tau), 32 entries for the block's reductions and
// kChasePartials for the partial sums of row_sums.
constexpr int kChasePartials = 1024;

template <typename T>
struct ChaseSpace {
  T* a;
  T* d;
  T* v;
  T* v_prev;
  T* y;
  T* z;
  T* scalars;
  T* scratch;
  real_t<T>* real_scratch;
  T* partial;
  int lda;
};

// Elements of T a ChaseSpace for bandwidth b needs (carve_space lays them out).
__host__ __device__ inline int64_t chase_space_elems(int b) {
  const int64_t lda = b + 1;
  return 2 * lda * b + 5 * int64_t(b) + 2 + 32 + 32 + kChasePartials;
}

template <typename T>
__host__ __device__ inline ChaseSpace<T> carve_space(T* base, int b) {
  ChaseSpace<T> sp;
  sp.lda = b + 1;
  sp.a = base;
  sp.d = sp.a + int64_t(sp.lda) * b;
  sp.v = sp.d + int64_t(sp.lda) * b;
  sp.v_prev = sp.v + b;
  sp.y = sp.v_prev + b;
  sp.z = sp.y + b;
  sp.scalars = sp.z + b;
  sp.scratch = sp.scalars + 2;
  // 32 reals fit in the 32 elements of T left at the end (sizeof(T) >= sizeof(real_t<T>)).
  sp.real_scratch = reinterpret_cast<real_t<T>*>(sp.scratch + 32);
  sp.partial = sp.scratch + 64;
  return sp;
}

// The (i, j) of a rows x cols block (i fastest) a thread takes: flat indices first, first +
// stride, ..., stepped without a division per entry.
struct Grid2 {
  int i, j, di, dj, rows;
  __host__ __device__ Grid2(int first, int stride, int rows_)
      : i(first % rows_), j(first / rows_), di(stride % rows_), dj(stride / rows_), rows(rows_) {}
  __host__ __device__ void next() {
    i += di;
    j += dj;
    if (i >= rows) {
      i -= rows;
      ++j;
    }
  }
};

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

// fetch(p) for a thread's share of p < total (first, first + stride, ...), then put(p, x): kBatch
// fetches in flight before their puts (a put is a store to shared memory that the compiler may not
// move a later load of the band past, so one put between two fetches would cost a step one L2
// round trip per entry of its share).
#pragma nv_exec_check_disable
template <typename T, int kBatch, typename Exec, typename Fetch, typename Put>
__host__ __device__ inline void gather(const Exec& ex, int total, Fetch fetch, Put put) {
  const int stride = ex.stride();
  for (int base = ex.first(); base < total; base += kBatch * stride) {
    T x[kBatch];
    SOLVERS_UNROLL
    for (int u = 0; u < kBatch; ++u) x[u] = base + u * stride < total ? fetch(base + u * stride) : T(0);
    SOLVERS_UNROLL
    for (int u = 0; u < kBatch; ++u)
      if (base + u * stride < total) put(base + u * stride, x[u]);
  }
}

// Loads in flight per thread while a step gathers its blocks (every entry of a 768-thread
// block's share for b = 64 in float64: one L2 round trip).
template <typename T>
constexpr int chase_batch() {
  return sizeof(T) > 8 ? 6 : 9;
}

// out(i, Σ_{j < inner} term(i, j)) for i < rows. Each row's sum is split into `parts` ranges of j
// so that every thread of the block takes one (a row's terms one after another on one thread made
// a step wait out inner dependent multiply-adds per product), the ranges' sums go to `partial`
// and are added in range order: the same bits every run for one block size. The block syncs
// between the two; the caller syncs before reading what out stored.
#pragma nv_exec_check_disable
template <typename T, typename Exec, typename Term, typename Out>
__host__ __device__ inline void row_sums(const Exec& ex, int rows, int inner, T* partial, Term term, Out out) {
  const int first = ex.first(), stride = ex.stride();
  int parts = stride / rows;
  if (parts > inner) parts = inner;
  if (parts > kChasePartials / rows) parts = kChasePartials / rows;
  if (parts <= 1) {
    for (int i = first; i < rows; i += stride) {
      T acc = T(0);
      for (int j = 0; j < inner; ++j) acc += term(i, j);
      out(i, acc);
    }
    return;
  }
  const int chunk = (inner + parts - 1) / parts;
  for (int t = first; t < parts * rows; t += stride) {
    const int i = t % rows, j0 = (t / rows) * chunk, j1 = j0 + chunk < inner ? j0 + chunk : inner;
    T acc = T(0);
    for (int j = j0; j < j1; ++j) acc += term(i, j);
    partial[t] = acc;
  }
  ex.sync();
  for (int i = first; i < rows; i += stride) {
    T acc = partial[i];
    for (int q = 1; q < parts; ++q) acc += partial[q * rows + i];
    out(i, acc);
  }
}

// Steps of sweep s: one per b rows from row s + 1 to n - 1.
__host__ __device__ inline int64_t chase_steps(int64_t n, int b, int64_t s) { return (n - 2 - s) / b + 1; }

// Step k of sweep s (see solvers/sb2st.py for the algorithm); sp.v_prev and sp.scalars[0] hold
// step k-1's reflector on entry and step k's on return. kB: the bandwidth as a compile-time
// constant (its index arithmetic then needs no division), or 0 for band.b at run time. The
// block's work is laid out for b rows even where the step has fewer (a sweep's last).
#pragma nv_exec_check_disable
template <typename T, int kB = 0, typename Exec>
__host__ __device__ void chase_step(const Exec& ex, const ChaseBand<T>& band, const ChaseReflectors<T>& out,
                                    const ChaseSpace<T>& sp, int64_t s, int64_t k) {
  using R = real_t<T>;
  const int b = kB > 0 ? kB : band.b;
  const int64_t ld = band.ld;
  const int64_t r0 = s + 1 + k * b;
  const int rows = int(band.n - r0 < b ? band.n - r0 : b);
  const int64_t c0 = r0 - b;
  const int lda = sp.lda;
  T* const a = sp.a;
  T* const d = sp.d;
  T* const v = sp.v;
  T* const y = sp.y;
  T* const z = sp.z;
  const int first = ex.first(), stride = ex.stride();
  // At step 0 the "left block" is the column to annihilate, B[r0:r0+rows, s], kept in z; later
  // it is D = B[r0:r0+rows, c0:c0+b].
  const StepEntries entries{b, rows, k == 0 ? 1 : b};
  // Band offset of entry (i, j) of the left block (where) or of A (i >= j).
  auto band_at = [&](int where, int i, int j) -> int64_t {
    if (where == 2) return (r0 + j) * ld + i - j;
    return k == 0 ? s * ld + 1 + i : (c0 + j) * ld + b + i - j;
  };
  gather<T, chase_batch<T>()>(
      ex, entries.count(),
      [&](int p) {
        int i, j;
        const int where = entries.locate(p, i, j);
        return where == 0 ? T(0) : load_band(&band.w[band_at(where, i, j)]);
      },
      [&](int p, T x) {
        int i, j;
        const int where = entries.locate(p, i, j);
        if (where == 2)
          a[i + j * lda] = i == j ? T(real_part(x)) : x;
        else if (where == 1)
          (k == 0 ? z[i] : d[i + j * lda]) = x;
      });
  ex.sync();
  if (k > 0) {  // D H_{k-1}: y = D v_prev, D -= tau y v_prevᴴ; its column 0 is the one to annihilate
    const T tau_prev = sp.scalars[0];
    row_sums<T>(
        ex, b, b, sp.partial, [&](int i, int j) { return d[i + j * lda] * sp.v_prev[j]; },
        [&](int i, T sum) {
          if (i < rows) y[i] = sum;
        });
    ex.sync();
    for (Grid2 at(first, stride, rows); at.j < b; at.next()) {
      const T x = d[at.i + at.j * lda] - tau_prev * (y[at.i] * conj(sp.v_prev[at.j]));
      d[at.i + at.j * lda] = x;
      if (at.j == 0) z[at.i] = x;
    }
    ex.sync();
  }

  // The reflector (larfg's conventions: Hᴴ x = beta e₁, beta real; H = I when x[1:] = 0 and x[0] real).
  R part = R(0);
  for (int i = first + 1; i < rows; i += stride) part += abs2(z[i]);
  const R xnorm = r_sqrt(ex.sum(part, sp.real_scratch));
  const T alpha = z[0];
  const bool trivial = xnorm == R(0) && imag_part(alpha) == R(0);
  const R norm = r_hypot(abs_of(alpha), xnorm);
  const R beta = -r_copysign(norm, real_part(alpha));
  const T tau = trivial ? T(0) : (R(1) / beta) * (T(beta) - alpha);
  const T scale = trivial ? T(1) : reciprocal(alpha - T(beta));
  const R beta_out = trivial ? real_part(alpha) : beta;
  for (int i = first; i < b; i += stride) v[i] = i == 0 ? T(1) : i < rows ? z[i] * scale : T(0);
  ex.sync();

  // One pass of sums for p = A v (rows 0 .. b-1, into y) and, past step 0, zᴴ = vᴴ D[:, 1:]
  // (rows b+1 .. 2b-1, into z[1:]); A's upper triangle is its lower one's conjugate. Entries past
  // the step's rows were never loaded: their terms are zero by selection, not by v's zeros.
  row_sums<T>(
      ex, k > 0 ? 2 * b : b, b, sp.partial,
      [&](int i, int j) {
        if (j >= rows) return T(0);
        if (i >= b) return conj(v[j]) * d[j + (i - b) * lda];
        const bool lower = i >= j;
        const T x = a[lower ? i + j * lda : j + i * lda];
        return (lower ? x : conj(x)) * v[j];
      },
      [&](int i, T sum) {
        if (i < rows)
          y[i] = sum;
        else if (i > b)
          z[i - b] = sum;
      });
  ex.sync();
  if (k > 0) {  // H_kᴴ D: D[:, 1:] -= conj(tau) v z; column 0 becomes beta e₁
    const T ctau = conj(tau);
    for (Grid2 at(first, stride, rows); at.j < b; at.next()) {
      const int i = at.i, j = at.j;
      if (j == 0) {
        d[i] = i == 0 ? T(beta_out) : T(0);
      } else {
        d[i + j * lda] -= ctau * (v[i] * z[j]);
      }
    }
  }
  T dot = T(0);  // pᴴ v, so that wᴴ v = conj(tau) pᴴ v for w = tau p
  for (int i = first; i < rows; i += stride) dot += conj(y[i]) * v[i];
  dot = ex.sum(dot, sp.scratch);
  const T coef = R(0.5) * (tau * (conj(tau) * dot));
  for (int i = first; i < rows; i += stride) y[i] = tau * y[i] - coef * v[i];  // w
  ex.sync();

  // A -= v wᴴ + w vᴴ (lower), D or the annihilated column, back to the band; the reflector.
  for (int p = first; p < entries.count(); p += stride) {
    int i, j;
    const int where = entries.locate(p, i, j);
    if (where == 2) {
      const T x = a[i + j * lda] - (v[i] * conj(y[j]) + y[i] * conj(v[j]));
      band.w[band_at(2, i, j)] = i == j ? T(real_part(x)) : x;
    } else if (where == 1) {
      band.w[band_at(1, i, j)] = k > 0 ? d[i + j * lda] : i == 0 ? T(beta_out) : T(0);
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
  for (int i = first; i < rows; i += stride) sp.v_prev[i] = v[i];
  if (first == 0) sp.scalars[0] = tau;
  ex.sync();
}

}  // namespace solvers
