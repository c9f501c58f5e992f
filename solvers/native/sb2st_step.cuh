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

// A step's scratch: the blocks A (rows x rows) and D (rows x b), column-major with leading
// dimension lda (b + 1: no shared-memory bank conflicts), vectors of b, the previous step's
// reflector (v_prev, scalars[0] = its tau), and 32 entries for the block's reductions.
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
  int lda;
};

// Elements of T a ChaseSpace for bandwidth b needs (carve_space lays them out).
__host__ __device__ inline int64_t chase_space_elems(int b) {
  const int64_t lda = b + 1;
  return 2 * lda * b + 5 * int64_t(b) + 2 + 32 + 32;
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

// Copies a rows x cols block entry by entry as a thread's share of Grid2 (fetch(i, j) gives an
// entry, put(i, j, x) stores it), kBatch fetches in flight before their puts. One put between two
// fetches would make every fetch wait for the one before: the put is a store to shared memory,
// which may alias the band as far as the compiler knows, so the next load cannot pass it, and a
// step would wait out one L2 round trip per entry of its share.
#pragma nv_exec_check_disable
template <typename T, int kBatch = 8, typename Exec, typename Fetch, typename Put>
__host__ __device__ inline void copy_block(const Exec& ex, int rows, int cols, Fetch fetch, Put put) {
  const int total = rows * cols, first = ex.first(), stride = ex.stride();
  const int mine = first < total ? (total - 1 - first) / stride + 1 : 0;  // entries of this thread
  Grid2 at(first, stride, rows);
  int done = 0;
  for (; done + kBatch <= mine; done += kBatch) {
    T x[kBatch];
    int i[kBatch], j[kBatch];
    SOLVERS_UNROLL
    for (int u = 0; u < kBatch; ++u) {
      i[u] = at.i;
      j[u] = at.j;
      x[u] = fetch(at.i, at.j);
      at.next();
    }
    SOLVERS_UNROLL
    for (int u = 0; u < kBatch; ++u) put(i[u], j[u], x[u]);
  }
  for (; done < mine; ++done, at.next()) put(at.i, at.j, fetch(at.i, at.j));
}

// Steps of sweep s: one per b rows from row s + 1 to n - 1.
__host__ __device__ inline int64_t chase_steps(int64_t n, int b, int64_t s) { return (n - 2 - s) / b + 1; }

// Step k of sweep s (see solvers/sb2st.py for the algorithm); sp.v_prev and sp.scalars[0] hold
// step k-1's reflector on entry and step k's on return.
#pragma nv_exec_check_disable
template <typename T, typename Exec>
__host__ __device__ void chase_step(const Exec& ex, const ChaseBand<T>& band, const ChaseReflectors<T>& out,
                                    const ChaseSpace<T>& sp, int64_t s, int64_t k) {
  using R = real_t<T>;
  const int b = band.b;
  const int64_t ld = band.ld;
  const int64_t r0 = s + 1 + k * b;
  const int rows = int(band.n - r0 < b ? band.n - r0 : b);
  const int64_t c0 = r0 - b;
  const int lda = sp.lda;
  T* const a = sp.a;
  T* const d = sp.d;
  T* const v = sp.v;
  T* const y = sp.y;
  const int first = ex.first(), stride = ex.stride();

  if (k == 0) {  // the column to annihilate: B[r0:r0+rows, s]
    for (int i = first; i < rows; i += stride) y[i] = load_band(&band.w[s * ld + 1 + i]);
  } else {       // D = B[r0:r0+rows, c0:c0+b]
    copy_block<T>(
        ex, rows, b, [&](int i, int j) { return load_band(&band.w[(c0 + j) * ld + b + i - j]); },
        [&](int i, int j, T x) { d[i + j * lda] = x; });
  }
  copy_block<T>(  // A = B[r0:, r0:], Hermitian
      ex, rows, rows,
      [&](int i, int j) {
        return i >= j ? load_band(&band.w[(r0 + j) * ld + i - j]) : conj(load_band(&band.w[(r0 + i) * ld + j - i]));
      },
      [&](int i, int j, T x) { a[i + j * lda] = i == j ? T(real_part(x)) : x; });
  ex.sync();
  if (k > 0) {
    const T tau_prev = sp.scalars[0];
    for (int i = first; i < rows; i += stride) {  // D H_{k-1}: y = D v_prev, D -= tau y v_prevᴴ
      T acc = T(0);
      for (int j = 0; j < b; ++j) acc += d[i + j * lda] * sp.v_prev[j];
      y[i] = acc;
    }
    ex.sync();
    for (Grid2 at(first, stride, rows); at.j < b; at.next())
      d[at.i + at.j * lda] -= tau_prev * (y[at.i] * conj(sp.v_prev[at.j]));
    ex.sync();
    for (int i = first; i < rows; i += stride) y[i] = d[i];  // the column to annihilate
    ex.sync();
  }

  // The reflector (larfg's conventions: Hᴴ x = beta e₁, beta real; H = I when x[1:] = 0 and x[0] real).
  R part = R(0);
  for (int i = first + 1; i < rows; i += stride) part += abs2(y[i]);
  const R xnorm = r_sqrt(ex.sum(part, sp.real_scratch));
  const T alpha = y[0];
  const bool trivial = xnorm == R(0) && imag_part(alpha) == R(0);
  const R norm = r_hypot(abs_of(alpha), xnorm);
  const R beta = -r_copysign(norm, real_part(alpha));
  const T tau = trivial ? T(0) : (R(1) / beta) * (T(beta) - alpha);
  const T scale = trivial ? T(1) : reciprocal(alpha - T(beta));
  const R beta_out = trivial ? real_part(alpha) : beta;
  for (int i = first; i < rows; i += stride) v[i] = i == 0 ? T(1) : y[i] * scale;
  ex.sync();

  if (k > 0) {  // H_kᴴ D: z = vᴴ D[:, 1:], D[:, 1:] -= conj(tau) v z; column 0 becomes beta e₁
    for (int j = first + 1; j < b; j += stride) {
      T acc = T(0);
      for (int i = 0; i < rows; ++i) acc += conj(v[i]) * d[i + j * lda];
      sp.z[j] = acc;
    }
    ex.sync();
    const T ctau = conj(tau);
    for (Grid2 at(first, stride, rows); at.j < b; at.next()) {
      const int i = at.i, j = at.j;
      if (j == 0) {
        d[i] = i == 0 ? T(beta_out) : T(0);
      } else {
        d[i + j * lda] -= ctau * (v[i] * sp.z[j]);
      }
    }
  }
  for (int i = first; i < rows; i += stride) {  // p = A v
    T acc = T(0);
    for (int j = 0; j < rows; ++j) acc += a[i + j * lda] * v[j];
    y[i] = acc;
  }
  ex.sync();
  T dot = T(0);  // pᴴ v, so that wᴴ v = conj(tau) pᴴ v for w = tau p
  for (int i = first; i < rows; i += stride) dot += conj(y[i]) * v[i];
  dot = ex.sum(dot, sp.scratch);
  const T coef = R(0.5) * (tau * (conj(tau) * dot));
  for (int i = first; i < rows; i += stride) y[i] = tau * y[i] - coef * v[i];  // w
  ex.sync();

  // A -= v wᴴ + w vᴴ, stored (lower); D or the annihilated column; the reflector.
  for (Grid2 at(first, stride, rows); at.j < rows; at.next()) {
    const int i = at.i, j = at.j;
    if (i < j) continue;
    T x = a[i + j * lda] - (v[i] * conj(y[j]) + y[i] * conj(v[j]));
    band.w[(r0 + j) * ld + i - j] = i == j ? T(real_part(x)) : x;
  }
  if (k == 0) {
    for (int i = first; i < rows; i += stride) band.w[s * ld + 1 + i] = i == 0 ? T(beta_out) : T(0);
  } else {
    ex.sync();
    for (Grid2 at(first, stride, rows); at.j < b; at.next())
      band.w[(c0 + at.j) * ld + b + at.i - at.j] = d[at.i + at.j * lda];
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
