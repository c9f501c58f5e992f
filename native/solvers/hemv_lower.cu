// y = A x reading only A's lower triangle (hemv_lower.h).
//
// A is cut into 64 × 64 tiles; tile (I, J), J <= I, holds both A[I][J] and, by symmetry,
// A[J][I] = A[I][J]ᴴ, so one read of it gives two products:
//   y_I += A_IJ x_J   (row sums)      y_J += A_IJᴴ x_I   (column sums; strictly lower on I = J)
// One block walks a strip of consecutive tiles of block row I: its row sums stay in registers
// for the whole strip (one write per strip), its column sums are reduced per tile and written
// to colpart[I][tile's columns]. A second kernel adds, for each y[c], the row parts of c's block
// row and the column parts of every block row at or below it — in a fixed order, so the result
// is deterministic. Each thread owns a 4 × 4 piece of the tile (16 independent loads in flight,
// each half-warp reading 128 contiguous bytes of a row); the per-tile column reduction needs
// one barrier thanks to two alternating shared buffers.
#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "cuda_check.h"
#include "hemv_lower.h"
#include "ordered_sum.cuh"
#include "scalar.cuh"

namespace solvers {
namespace {

constexpr int kTile = 64;
constexpr int kSide = 16;              // 16 × 16 threads per tile
constexpr int kPer = kTile / kSide;    // each owns rows ty + 16k and columns tx + 16q, k, q < 4
constexpr int kThreads = kSide * kSide;
constexpr int kWarps = kThreads / 32;
constexpr int64_t kMaxStrips = 64;     // strips per block row: bounds the row-part scratch
constexpr int64_t kMaxStrip = 16;      // tiles per strip
constexpr int64_t kTargetBlocks = 1024;
constexpr int kCombineCols = 32;
constexpr int kCombineGroups = kThreads / kCombineCols;

struct Layout {
  int64_t nbr;     // block rows (= block columns)
  int64_t padded;  // nbr * kTile: the row length of colpart
  int64_t strip;   // tiles per strip
  int64_t strips;  // strips of the longest block row

  static Layout of(int64_t m) {
    Layout l{};
    l.nbr = (m + kTile - 1) / kTile;
    l.padded = l.nbr * kTile;
    const int64_t tiles = l.nbr * (l.nbr + 1) / 2;
    // Long strips amortize the row-sum write; enough of them keep every SM busy.
    const int64_t want = std::min(kMaxStrip, (tiles + kTargetBlocks - 1) / kTargetBlocks);
    l.strip = std::max<int64_t>({1, want, (l.nbr + kMaxStrips - 1) / kMaxStrips});
    l.strips = (l.nbr + l.strip - 1) / l.strip;
    return l;
  }
};

// The 16 elements of one tile this thread owns (rows ty + 16k of `row`, columns c0 + tx + 16q):
// row sums into racc, column sums into cacc. On the diagonal tile only c <= r is read and only
// c < r is counted a second time, conjugated; a diagonal entry counts its real part only. About
// 100 registers for a real T: two blocks per SM and 4 KiB of loads in flight per warp (16 loads
// of 8 bytes per lane), well above what HBM's latency needs.
template <bool kDiagonal, typename T>
__device__ inline void tile_products(const T* const* row, unsigned row_ok, int tx, int ty, int64_t c0, int64_t m,
                                     const T* x, const T* xr, T* racc, T* cacc) {
  T xc[kPer];
#pragma unroll
  for (int q = 0; q < kPer; ++q) {
    const int64_t c = c0 + tx + kSide * q;
    xc[q] = (!kDiagonal || c < m) ? x[c] : T(0);  // off the diagonal, c < m always
  }
  T v[kPer][kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k)
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      const bool ok = ((row_ok >> k) & 1u) && (!kDiagonal || tx + kSide * q <= ty + kSide * k);
      v[k][q] = ok ? row[k][c0 + tx + kSide * q] : T(0);
      if constexpr (kDiagonal && is_complex_v<T>)
        if (tx + kSide * q == ty + kSide * k) v[k][q].im = 0;
    }
#pragma unroll
  for (int k = 0; k < kPer; ++k)
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      racc[k] += v[k][q] * xc[q];
      if (!kDiagonal || tx + kSide * q < ty + kSide * k) cacc[q] += conj(v[k][q]) * xr[k];
    }
}

// Two blocks per SM where the registers allow (real types and complex64); complex128's tile
// takes twice the registers of double's, so one block per SM, which does not spill.
template <typename T>
constexpr int kMinBlocksPerSm = sizeof(T) > 8 ? 1 : 2;

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm<T>) strip_products(const T* a, int64_t ld, int64_t m, const T* x,
                                                           Layout l, T* colpart, T* rowpart) {
  const int64_t row_block = blockIdx.y, strip = blockIdx.x;
  const int64_t first = strip * l.strip;
  if (first > row_block) return;  // this block row has fewer strips
  const int64_t last = first + l.strip < row_block + 1 ? first + l.strip : row_block + 1;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;  // lanes < 16: ty even, tx = lane
  __shared__ T cols[2][kWarps][kTile];

  const T* row[kPer];
  unsigned row_ok = 0;
  T xr[kPer], racc[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int64_t r = row_block * kTile + ty + kSide * k;
    row_ok |= unsigned(r < m) << k;
    row[k] = a + (r < m ? r : 0) * ld;
    xr[k] = r < m ? x[r] : T(0);
    racc[k] = 0;
  }
  int parity = 0;
  for (int64_t col_block = first; col_block < last; ++col_block) {
    T cacc[kPer] = {};
    const int64_t c0 = col_block * kTile;
    if (col_block < row_block) tile_products<false>(row, row_ok, tx, ty, c0, m, x, xr, racc, cacc);
    else tile_products<true>(row, row_ok, tx, ty, c0, m, x, xr, racc, cacc);
    // Column sums over the 16 thread rows: the two of a warp by a shuffle, the 8 warps in smem.
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      const T both = cacc[q] + shfl_xor(cacc[q], 16);
      if (lane < kSide) cols[parity][warp][tx + kSide * q] = both;
    }
    __syncthreads();  // the other buffer's readers are past this point too: one barrier per tile
    if (threadIdx.x < kTile) {
      T s = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) s += cols[parity][w][threadIdx.x];
      colpart[row_block * l.padded + col_block * kTile + threadIdx.x] = s;
    }
    parity ^= 1;
  }
  // Row sums over the 16 thread columns (a butterfly: every lane of the group gets the same sum).
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    T s = racc[k];
#pragma unroll
    for (int o = kSide / 2; o > 0; o /= 2) s += shfl_xor(s, o);
    if (tx == 0) rowpart[(row_block * l.strips + strip) * kTile + ty + kSide * k] = s;
  }
}

// y[c] = the row parts of c's block row + the column parts of the block rows at or below it.
// 32 columns per block; 8 groups of threads split the block rows, then add in group order.
template <typename T>
__global__ void combine(int64_t m, Layout l, const T* colpart, const T* rowpart, T* y) {
  __shared__ T part[kCombineGroups][kCombineCols];
  const int tc = threadIdx.x % kCombineCols, g = threadIdx.x / kCombineCols;
  const int64_t c = int64_t(blockIdx.x) * kCombineCols + tc;
  T s = 0;
  if (c < m) {
    const int64_t block = c / kTile;
    for (int64_t i = block + g; i < l.nbr; i += kCombineGroups) s += colpart[i * l.padded + c];
    if (g == kCombineGroups - 1) {
      const int64_t strips = block / l.strip + 1;
      for (int64_t q = 0; q < strips; ++q) s += rowpart[(block * l.strips + q) * kTile + c % kTile];
    }
  }
  part[g][tc] = s;
  __syncthreads();
  if (g == 0 && c < m) y[c] = sum_rows_in_order(part, tc);
}

}  // namespace

size_t hemv_lower_work_elems(int64_t m) {
  const Layout l = Layout::of(std::max<int64_t>(m, 1));
  return size_t(l.nbr) * size_t(l.padded + kMaxStrips * kTile);  // colpart + the largest rowpart
}

template <typename T>
void hemv_lower(const T* a, int64_t ld, int64_t m, const T* x, T* y, T* work, cudaStream_t stream) {
  if (m <= 0) return;
  const Layout l = Layout::of(m);
  if (l.nbr > 65535) throw std::invalid_argument("solvers: hemv_lower order too large (grid rows)");
  T* colpart = work;
  T* rowpart = work + size_t(l.nbr) * size_t(l.padded);
  strip_products<T><<<dim3(unsigned(l.strips), unsigned(l.nbr)), kThreads, 0, stream>>>(a, ld, m, x, l, colpart,
                                                                                        rowpart);
  cuda_check(cudaGetLastError(), "launch(hemv_lower strip_products)");
  const int64_t blocks = (m + kCombineCols - 1) / kCombineCols;
  combine<T><<<unsigned(blocks), kThreads, 0, stream>>>(m, l, colpart, rowpart, y);
  cuda_check(cudaGetLastError(), "launch(hemv_lower combine)");
}

#define SOLVERS_HEMV_LOWER(T) template void hemv_lower<T>(const T*, int64_t, int64_t, const T*, T*, T*, cudaStream_t)
SOLVERS_HEMV_LOWER(float);
SOLVERS_HEMV_LOWER(double);
SOLVERS_HEMV_LOWER(Complex<float>);
SOLVERS_HEMV_LOWER(Complex<double>);

void hemv_lower(ScalarType t, const void* a, int64_t ld, int64_t m, const void* x, void* y, void* work,
                cudaStream_t stream) {
  with_scalar(t, "hemv_lower", [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    hemv_lower(static_cast<const T*>(a), ld, m, static_cast<const T*>(x), static_cast<T*>(y), static_cast<T*>(work),
               stream);
  });
}

}  // namespace solvers
