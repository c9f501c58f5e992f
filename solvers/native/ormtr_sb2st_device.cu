// ormtr_sb2st.h on the GPU. A block takes one group of a slot and a run of C-column tiles of Y
// (C = 512 bytes of a row), one tile after another: the group's 2g × C rows of a tile go to
// shared memory (the next tile's copy in flight meanwhile, cp.async into a second buffer),
// W = Vᴴ Y (g × C) is formed there, Y -= (V T) W accumulates onto the tile in registers, and the
// tile's h rows go back. Eight warps; warp w forms W's rows 8w … 8w+7 and updates Y's row blocks
// w and w + 8. A float64 block loads its operands from V and V T into registers once for all its
// tiles; complex128 has no registers for that and loads them per tile, a few steps at a time.
//
// Products: mma.m8n8k4 in float64 (one accumulator pair per thread per 8 × 8 tile; a complex
// product is four of them on the parts). The zero triangles are skipped: W's rows 8w … 8w+7 read
// V's rows 8w … 8w+g+7 only, and Y's rows 8r … 8r+7 read V T's columns from 8r - g + 1 on.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda_check.h"
#include "ormtr_sb2st.h"
#include "scalar.cuh"

namespace solvers {

namespace {

constexpr int kG = kOrmtrSb2stGroup;
constexpr int kTileRows = 2 * kG;  // a group's h = 2g - 1 rows and the one it leaves alone
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
static_assert(kG == 8 * kWarps, "one W row block per warp");

template <typename T> constexpr int kCols = 512 / int(sizeof(T));
// Shared rows 64 bytes longer than the tile's: the four rows one mma operand reads start on
// different banks.
template <typename T> constexpr int kStride = kCols<T> + 64 / int(sizeof(T));
// Two tiles (one in use, the next arriving) and W.
template <typename T> constexpr size_t kSharedBytes = size_t(2 * kTileRows + kG) * kStride<T> * sizeof(T);

// d += a b for one 8 × 4 by 4 × 8 tile product (PTX ISA, "Matrix Fragments for mma.m8n8k4 with
// .f64": a at row lane/4, column lane%4; b at row lane%4, column lane/4; d at row lane/4,
// columns 2(lane%4) and 2(lane%4)+1).
__device__ inline void mma(double& d0, double& d1, double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
      : "+d"(d0), "+d"(d1)
      : "d"(a), "d"(b));
#endif
}

template <typename T> struct Accumulator;

template <>
struct Accumulator<double> {
  double c[2];
  __device__ void add_product(double a, double b) { mma(c[0], c[1], a, b); }
  __device__ double get(int i) const { return c[i]; }
  __device__ void set(int i, double x) { c[i] = x; }
};

template <>
struct Accumulator<Complex<double>> {
  double re[2], im[2];
  __device__ void add_product(Complex<double> a, Complex<double> b) {
    mma(re[0], re[1], a.re, b.re);
    mma(re[0], re[1], -a.im, b.im);
    mma(im[0], im[1], a.re, b.im);
    mma(im[0], im[1], a.im, b.re);
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

// Asynchronous copies global → shared (PTX cp.async; kBytes 8 or 16), zero-filled where
// `from` is 0 bytes.
template <int kBytes>
__device__ inline void copy_async(void* to, const void* from, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned shared_address = static_cast<unsigned>(__cvta_generic_to_shared(to));
  if constexpr (kBytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared_address), "l"(from), "r"(bytes));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(shared_address), "l"(from), "n"(kBytes),
                 "r"(bytes));
#endif
}
__device__ inline void copies_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;");
#endif
}
template <int kPending>
__device__ inline void copies_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending));
#endif
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 1)
    slot_kernel(T* y, int64_t ld, int64_t ncols, int tiles_per_block, const T* __restrict__ v,
                const T* __restrict__ vt, int64_t row0, int64_t row_step, int h) {
  constexpr int C = kCols<T>, S = kStride<T>, kTiles = C / 8;
  constexpr int kSteps1 = (kG + 8) / 4, kSteps2 = kG / 4;  // k-steps of the two products
  constexpr bool kHeld = !is_complex_v<T>;                  // operands loaded once for all tiles
  constexpr int kChunk1 = kHeld ? kSteps1 : 6, kChunk2 = kHeld ? kSteps2 : 4;  // else per tile, in chunks
  extern __shared__ __align__(16) unsigned char shared[];
  T* const buffers = reinterpret_cast<T*>(shared);  // two of kTileRows × S
  T* const w = buffers + 2 * kTileRows * S;         // kG × S
  auto buffer = [&](int64_t i) { return buffers + (i & 1) * kTileRows * S; };
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = lane / 4, col = lane % 4;  // of the mma fragments
  const size_t group_elems = size_t(h) * kG;
  const T* gv = v + blockIdx.y * group_elems;
  const T* gvt = vt + blockIdx.y * group_elems;
  T* const gy = y + (row0 + int64_t(blockIdx.y) * row_step) * ld;
  const int64_t column_tiles = (ncols + C - 1) / C;
  const int64_t first_tile = int64_t(blockIdx.x) * tiles_per_block;
  const int64_t end_tile = min(first_tile + tiles_per_block, column_tiles);

  const int block_row[2] = {8 * warp + row, 8 * (warp + kWarps) + row};
  // Row block w + 8 (rows 8w+64 …) of V T is zero left of column 8w + 1: its steps from 8w on.
  const int second_from = (8 * (warp + kWarps) - kG + 1) & ~3;
  T a[kChunk1], a0[kChunk2], a1[kChunk2];
  auto load_v = [&](int s0) {  // V's fragments of the first product's steps s0 …
#pragma unroll
    for (int s = 0; s < kChunk1; ++s) {
      const int r = 8 * warp + 4 * (s0 + s) + col;
      a[s] = r < h ? conj(load_read_only(gv + r * kG + 8 * warp + row)) : T(0);
    }
  };
  auto load_vt = [&](int s0) {  // -V T's fragments of the second product's steps s0 …
#pragma unroll
    for (int s = 0; s < kChunk2; ++s) {
      const int k = 4 * (s0 + s);
      a0[s] = -load_read_only(gvt + block_row[0] * kG + k + col);
      a1[s] = k >= second_from && block_row[1] < h ? -load_read_only(gvt + block_row[1] * kG + k + col) : T(0);
    }
  };
  auto fetch = [&](int64_t tile, T* to) {  // the tile's rows, zeros past row h-1 and column ncols-1
    const int64_t c0 = tile * C;
    const int cols = int(min(int64_t(C), ncols - c0));
#pragma unroll 8
    for (int e = threadIdx.x; e < kTileRows * C; e += kThreads) {
      const int r = e / C, c = e % C;
      const bool inside = r < h && c < cols;
      copy_async<sizeof(T)>(to + r * S + c, inside ? gy + r * ld + c0 + c : gy, inside ? int(sizeof(T)) : 0);
    }
    copies_commit();
  };

  if (first_tile >= end_tile) return;
  fetch(first_tile, buffer(0));
  if constexpr (kHeld) {
    load_v(0);
    load_vt(0);
  }
  for (int64_t tile = first_tile; tile < end_tile; ++tile) {
    T* const here = buffer(tile - first_tile);
    if (tile + 1 < end_tile) {
      fetch(tile + 1, buffer(tile + 1 - first_tile));
      copies_wait<1>();
    } else {
      copies_wait<0>();
    }
    __syncthreads();

    {  // W's rows 8w … 8w+7 = V's columns 8w … 8w+7, nonzero in rows 8w … 8w+g+6 only
      Accumulator<T> acc[kTiles] = {};
#pragma unroll
      for (int s0 = 0; s0 < kSteps1; s0 += kChunk1) {
        if constexpr (!kHeld) load_v(s0);
#pragma unroll
        for (int s = 0; s < kChunk1; ++s) {
          const int r = 8 * warp + 4 * (s0 + s) + col;
#pragma unroll
          for (int t = 0; t < kTiles; ++t) acc[t].add_product(a[s], here[r * S + 8 * t + row]);
        }
      }
#pragma unroll
      for (int t = 0; t < kTiles; ++t)
#pragma unroll
        for (int i = 0; i < 2; ++i) w[(8 * warp + row) * S + 8 * t + 2 * col + i] = acc[t].get(i);
    }
    __syncthreads();

    Accumulator<T> acc[2][kTiles];
#pragma unroll
    for (int q = 0; q < 2; ++q)
#pragma unroll
      for (int t = 0; t < kTiles; ++t)
#pragma unroll
        for (int i = 0; i < 2; ++i) acc[q][t].set(i, here[block_row[q] * S + 8 * t + 2 * col + i]);
#pragma unroll 1
    for (int s0 = 0; s0 < kSteps2; s0 += kChunk2) {
      if constexpr (!kHeld) load_vt(s0);
#pragma unroll
      for (int s = 0; s < kChunk2; ++s) {
        const int k = 4 * (s0 + s);
        const bool second = k >= second_from;
#pragma unroll
        for (int t = 0; t < kTiles; ++t) {
          const T b = w[(k + col) * S + 8 * t + row];
          acc[0][t].add_product(a0[s], b);
          if (second) acc[1][t].add_product(a1[s], b);
        }
      }
    }
    const int64_t c0 = tile * C;
    const int cols = int(min(int64_t(C), ncols - c0));
#pragma unroll
    for (int q = 0; q < 2; ++q)
#pragma unroll
      for (int t = 0; t < kTiles; ++t)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int c = 8 * t + 2 * col + i;
          if (block_row[q] < h && c < cols) gy[block_row[q] * ld + c0 + c] = acc[q][t].get(i);
        }
    __syncthreads();  // before the next fetch overwrites this buffer and W
  }
}

// Column tiles per block: enough blocks for about four per SM (the slot's groups × tiles spread
// evenly), at most 8 tiles each, so that a block's next copy overlaps its products.
int tiles_per_block(int64_t groups, int64_t column_tiles, int sms) {
  const int64_t per_block = groups * column_tiles / (4 * int64_t(sms));
  return int(std::max<int64_t>(1, std::min<int64_t>({8, per_block, column_tiles})));
}

template <typename T>
void launch_slots(const OrmtrSb2stArgs& a, int device, cudaStream_t stream) {
  constexpr int C = kCols<T>;
  const int h = a.band + a.group - 1;
  const size_t group_elems = size_t(h) * a.group;
  const int64_t column_tiles = (a.ncols + C - 1) / C;
  int sms = 0;
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(MultiProcessorCount)");
  cuda_check(cudaFuncSetAttribute(slot_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSharedBytes<T>)),
             "cudaFuncSetAttribute(ormtr_sb2st slot_kernel)");
  const T* v = static_cast<const T*>(a.v);
  const T* vt = static_cast<const T*>(a.vt);
  for (int64_t s = a.first_slot; s < a.end_slot; ++s) {
    const int64_t first = a.slot_start[s], count = a.slot_start[s + 1] - first;
    if (count == 0) continue;
    if (count > 65535) throw std::invalid_argument("solvers: ormtr_sb2st: more than 65535 groups in a slot");
    const int per_block = tiles_per_block(count, column_tiles, sms);
    const int64_t blocks = (column_tiles + per_block - 1) / per_block;
    slot_kernel<T><<<dim3(unsigned(blocks), unsigned(count)), kThreads, kSharedBytes<T>, stream>>>(
        static_cast<T*>(a.y), a.ld, a.ncols, per_block, v + (first - a.v_base) * group_elems,
        vt + (first - a.vt_base) * group_elems, a.slot_row[s], a.band + a.group, h);
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
  if ((args.ncols + 511) / 512 > int64_t(0x7fffffff))
    throw std::invalid_argument("solvers: ormtr_sb2st: too many columns");
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  if (t == ScalarType::F64)
    launch_slots<double>(args, device, stream);
  else
    launch_slots<Complex<double>>(args, device, stream);
}

}  // namespace solvers
