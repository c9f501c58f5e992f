// ormtr_sb2st.h on the GPU. A block takes one group of a slot and one C-column tile of Y
// (C = 512 bytes of a row): the group's 2g × C rows of Y go to shared memory, W = Vᴴ Y (g × C)
// is formed there, Y -= (V T) W accumulates onto the tile in registers, and the tile's h rows go
// back. Eight warps, each on half the columns: warp w forms W's rows 16(w/2) … 16(w/2)+15 and
// updates Y's row blocks w/2 and 7 - w/2 (16 rows each; the second has fewer nonzero columns of
// V T, so every warp gets a similar share).
//
// Products: mma.m16n8k8 in float64 (sm_90: on an H100 the m8n8k4 form ran the FP64 tensor pipe
// at about half the rate, and this kernel was bound by it); a complex product is four of them on
// the parts. The zero triangles are skipped: W's rows 16r … 16r+15 read V's rows 16r … 16r+g+15
// only, and Y's rows 16r … 16r+15 read V T's columns from 16r - g + 1 on.
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "ormtr_sb2st.h"
#include "scalar.cuh"

namespace solvers {

namespace {

constexpr int kG = kOrmtrSb2stGroup;
constexpr int kTileRows = 2 * kG;  // a group's h = 2g - 1 rows and the one it leaves alone
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
static_assert(kG == 16 * (kWarps / 2) && kTileRows == 16 * kWarps, "W's row blocks on warp pairs, Y's two a warp");

// Columns of a tile: 512 bytes of a row in float64, 256 in complex128 (whose accumulators take
// twice the registers).
template <typename T> constexpr int kCols = (is_complex_v<T> ? 256 : 512) / int(sizeof(T));
// Shared rows 64 bytes longer than the tile's: the rows one mma operand reads start on
// different banks.
template <typename T> constexpr int kStride = kCols<T> + 64 / int(sizeof(T));
template <typename T> constexpr size_t kSharedBytes = size_t(kTileRows + kG) * kStride<T> * sizeof(T);

// d += a b for a 16 × 8 by 8 × 8 product (PTX ISA, "Matrix Fragments for mma.m16n8k8", .f64):
// with g = lane/4 and t = lane%4, a holds A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]; b holds
// B[t][g], B[t+4][g]; d holds D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1].
__device__ inline void mma(double (&d)[4], const double (&a)[4], const double (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#endif
}

// The fragment entries' places: a's q-th at row g + 8(q%2), column t + 4(q/2); b's i-th at row
// t + 4i; d's i-th at row g + 8(i/2), column 2t + i%2.
__device__ inline int a_row(int g, int q) { return g + 8 * (q % 2); }
__device__ inline int a_col(int t, int q) { return t + 4 * (q / 2); }
__device__ inline int d_row(int g, int i) { return g + 8 * (i / 2); }
__device__ inline int d_col(int t, int i) { return 2 * t + i % 2; }

template <typename T> struct Accumulator;

template <>
struct Accumulator<double> {
  double c[4];
  template <bool kConjugateA>
  __device__ void add_product(const double (&a)[4], const double (&b)[2]) {
    mma(c, a, b);
  }
  __device__ double get(int i) const { return c[i]; }
  __device__ void set(int i, double x) { c[i] = x; }
};

template <>
struct Accumulator<Complex<double>> {
  double re[4], im[4];
  // d += a b, or conj(a) b: (ar ∓ i ai)(br + i bi) = ar br ± ai bi + i (ar bi ∓ ai br).
  template <bool kConjugateA>
  __device__ void add_product(const Complex<double> (&a)[4], const Complex<double> (&b)[2]) {
    double ar[4], ai[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      ar[q] = a[q].re;
      ai[q] = a[q].im;
    }
    const double br[2] = {b[0].re, b[1].re}, bi[2] = {b[0].im, b[1].im};
    const double minus_br[2] = {-b[0].re, -b[1].re}, minus_bi[2] = {-b[0].im, -b[1].im};
    mma(re, ar, br);
    mma(re, ai, kConjugateA ? bi : minus_bi);
    mma(im, ar, bi);
    mma(im, ai, kConjugateA ? minus_br : br);
  }
  __device__ Complex<double> get(int i) const { return {re[i], im[i]}; }
  __device__ void set(int i, Complex<double> x) {
    re[i] = x.re;
    im[i] = x.im;
  }
};

__device__ inline double load_read_only(const double* p) { return __ldg(p); }
__device__ inline Complex<double> load_read_only(const Complex<double>* p) {
  const double2 x = __ldg(reinterpret_cast<const double2*>(p));
  return {x.x, x.y};
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 2)
    slot_kernel(T* y, int64_t ld, int64_t ncols, const T* __restrict__ v, const T* __restrict__ vt, int64_t row0,
                int64_t row_step, int h) {
  constexpr int C = kCols<T>, S = kStride<T>, kTiles = C / 16;  // 8-column tiles of a warp's half
  constexpr int kSteps1 = (kG + 16) / 8, kSteps2 = kG / 8;     // k-steps of the two products
  // Steps whose operands from global memory are loaded at once (as many as registers allow).
  constexpr int kChunk1 = is_complex_v<T> ? 1 : 5, kChunk2 = is_complex_v<T> ? 1 : 2;
  constexpr int kLoadsAtOnce = 8;  // of the tile's, in flight at once
  static_assert(kSteps1 % kChunk1 == 0 && kSteps2 % kChunk2 == 0, "whole chunks");
  extern __shared__ __align__(16) unsigned char shared[];
  T* tile = reinterpret_cast<T*>(shared);  // kTileRows × S
  T* w = tile + kTileRows * S;             // kG × S
  const int64_t c0 = int64_t(blockIdx.x) * C;
  const int cols = int(min(int64_t(C), ncols - c0));
  const size_t group_elems = size_t(h) * kG;
  const T* gv = v + blockIdx.y * group_elems;
  const T* gvt = vt + blockIdx.y * group_elems;
  T* gy = y + (row0 + int64_t(blockIdx.y) * row_step) * ld + c0;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;   // of the mma fragments
  const int n0 = (warp % 2) * (C / 2);    // this warp's half of the columns
  const int w_rows = 16 * (warp / 2);     // its rows of W

  // Every load a phase needs is issued before its first use: one per step waited an L2 round
  // trip per step.
  T a[kChunk1][4];
  auto load_v = [&](int s0) {  // V's fragments (Vᴴ's, conjugated) of the first product's steps s0 …
#pragma unroll
    for (int s = 0; s < kChunk1; ++s)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int r = w_rows + 8 * (s0 + s) + a_col(t, q);
        a[s][q] = T(0);
        if (r < h) a[s][q] = load_read_only(gv + r * kG + w_rows + a_row(g, q));
      }
  };
  load_v(0);
#pragma unroll(kLoadsAtOnce)
  for (int e = threadIdx.x; e < kTileRows * C; e += kThreads) {
    const int r = e / C, c = e % C;
    tile[r * S + c] = r < h && c < cols ? gy[r * ld + c] : T(0);
  }
  __syncthreads();

  {  // W's rows 16r … 16r+15 = V's columns, nonzero in rows 16r … 16r+g+14 only
    Accumulator<T> acc[kTiles] = {};
#pragma unroll
    for (int s0 = 0; s0 < kSteps1; s0 += kChunk1) {
      if (s0 > 0) load_v(s0);
#pragma unroll
      for (int s = 0; s < kChunk1; ++s) {
        const int k = w_rows + 8 * (s0 + s) + t;
#pragma unroll
        for (int j = 0; j < kTiles; ++j) {
          const T b[2] = {tile[k * S + n0 + 8 * j + g], tile[(k + 4) * S + n0 + 8 * j + g]};
          acc[j].template add_product<true>(a[s], b);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) w[(w_rows + d_row(g, i)) * S + n0 + 8 * j + d_col(t, i)] = acc[j].get(i);
  }
  __syncthreads();

  // Y's row blocks w/2 (every column of V T) and 7 - w/2 (V T is zero left of column
  // 16(7 - w/2) - g + 1: its steps from there on).
  const int y_rows[2] = {16 * (warp / 2), 16 * (kWarps - 1 - warp / 2)};
  const int second_from = max(0, y_rows[1] - kG + 1) / 8;
  Accumulator<T> acc[2][kTiles];
#pragma unroll
  for (int p = 0; p < 2; ++p)
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[p][j].set(i, tile[(y_rows[p] + d_row(g, i)) * S + n0 + 8 * j + d_col(t, i)]);
#pragma unroll 1
  for (int s0 = 0; s0 < kSteps2; s0 += kChunk2) {
    T a0[kChunk2][4], a1[kChunk2][4];  // -V T's fragments
#pragma unroll
    for (int s = 0; s < kChunk2; ++s)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int k = 8 * (s0 + s) + a_col(t, q);
        const int r0 = y_rows[0] + a_row(g, q), r1 = y_rows[1] + a_row(g, q);
        a0[s][q] = -load_read_only(gvt + r0 * kG + k);
        a1[s][q] = T(0);
        if (s0 + s >= second_from && r1 < h) a1[s][q] = -load_read_only(gvt + r1 * kG + k);
      }
#pragma unroll
    for (int s = 0; s < kChunk2; ++s) {
      const int k = 8 * (s0 + s) + t;
      const bool second = s0 + s >= second_from;
#pragma unroll
      for (int j = 0; j < kTiles; ++j) {
        const T b[2] = {w[k * S + n0 + 8 * j + g], w[(k + 4) * S + n0 + 8 * j + g]};
        acc[0][j].template add_product<false>(a0[s], b);
        if (second) acc[1][j].template add_product<false>(a1[s], b);
      }
    }
  }
#pragma unroll
  for (int p = 0; p < 2; ++p)
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = y_rows[p] + d_row(g, i), c = n0 + 8 * j + d_col(t, i);
        if (r < h && c < cols) gy[r * ld + c] = acc[p][j].get(i);
      }
}

template <typename T>
void launch_slots(const OrmtrSb2stArgs& a, cudaStream_t stream) {
  constexpr int C = kCols<T>;
  const int h = a.band + a.group - 1;
  const size_t group_elems = size_t(h) * a.group;
  const int64_t column_blocks = (a.ncols + C - 1) / C;
  if (column_blocks > int64_t(0x7fffffff)) throw std::invalid_argument("solvers: ormtr_sb2st: too many columns");
  cuda_check(cudaFuncSetAttribute(slot_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSharedBytes<T>)),
             "cudaFuncSetAttribute(ormtr_sb2st slot_kernel)");
  const T* v = static_cast<const T*>(a.v);
  const T* vt = static_cast<const T*>(a.vt);
  for (int64_t s = a.first_slot; s < a.end_slot; ++s) {
    const int64_t first = a.slot_start[s], count = a.slot_start[s + 1] - first;
    if (count == 0) continue;
    if (count > 65535) throw std::invalid_argument("solvers: ormtr_sb2st: more than 65535 groups in a slot");
    slot_kernel<T><<<dim3(unsigned(column_blocks), unsigned(count)), kThreads, kSharedBytes<T>, stream>>>(
        static_cast<T*>(a.y), a.ld, a.ncols, v + (first - a.v_base) * group_elems, vt + (first - a.vt_base) * group_elems,
        a.slot_row[s], a.band + a.group, h);
  }
  cuda_check(cudaGetLastError(), "ormtr_sb2st slot_kernel launch");
}

}  // namespace

bool ormtr_sb2st_device_supports(ScalarType t, int band, int group) {
  return (t == ScalarType::F64 || t == ScalarType::C128) && band == kG && group == kG;
}

void ormtr_sb2st_device(ScalarType t, const OrmtrSb2stArgs& args, int device, cudaStream_t stream) {
  if (!ormtr_sb2st_device_supports(t, args.band, args.group))
    throw std::invalid_argument("solvers: ormtr_sb2st's kernel takes float64 and complex128 with band = group = " +
                                std::to_string(kG) + ", not dtype code " + std::to_string(int(t)) + ", band " +
                                std::to_string(args.band) + ", group " + std::to_string(args.group));
  if (args.ncols < 0 || args.ld < args.ncols || args.first_slot < 0 || args.end_slot < args.first_slot)
    throw std::invalid_argument("solvers: ormtr_sb2st: bad shape (ncols " + std::to_string(args.ncols) + ", ld " +
                                std::to_string(args.ld) + ", slots " + std::to_string(args.first_slot) + " … " +
                                std::to_string(args.end_slot) + ")");
  if (args.ncols == 0 || args.end_slot == args.first_slot) return;
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  if (t == ScalarType::F64)
    launch_slots<double>(args, stream);
  else
    launch_slots<Complex<double>>(args, stream);
}

}  // namespace solvers
