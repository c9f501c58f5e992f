// p = A v for a symmetric m × m A (row-major, leading dimension ld) reading only its lower
// triangle, each element once: element (r, c), c < r, adds A[r,c] v[c] to p[r] and A[r,c] v[r]
// to p[c]. Half the memory traffic of a gemv over both stored triangles (the trailing matrix of
// the tridiagonalization is read once per column, so this is most of its time).
//
// symv_lower_tiles: block (s, b) takes row stripe b (kStripe rows) against column segment s
// (kSegment columns) of the lower triangle and writes its row sums to rows[s][r] and its column
// sums to cols[b][c]; symv_lower_combine adds the parts of each p[c] in a fixed order, so the
// result does not depend on scheduling. Workspace: symv_lower_parts(m) elements.
#pragma once
#include <cstdint>

namespace hpcolls {

constexpr int64_t kStripe = 64;     // rows per tile block
constexpr int64_t kSegment = 1024;  // columns per tile block
constexpr int kSymvThreads = 256;   // 64 columns x 4 row groups

__host__ __device__ inline int64_t symv_lower_stripes(int64_t m) { return (m + kStripe - 1) / kStripe; }
__host__ __device__ inline int64_t symv_lower_segments(int64_t m) { return (m + kSegment - 1) / kSegment; }
__host__ __device__ inline int64_t symv_lower_parts(int64_t m) { return (symv_lower_stripes(m) + symv_lower_segments(m)) * m; }

template <typename T>
__global__ void symv_lower_tiles(const T* a, int64_t ld, int64_t m, const T* v, T* row_parts, T* col_parts) {
  constexpr int kRowsPerThread = kStripe / 4;
  const int64_t b = blockIdx.y, s = blockIdx.x;
  const int64_t r0 = b * kStripe, r1 = r0 + kStripe < m ? r0 + kStripe : m;
  const int64_t c0 = s * kSegment;
  if (c0 >= r1) return;  // above the diagonal: nothing of the lower triangle here
  const int64_t c1 = c0 + kSegment < r1 ? c0 + kSegment : r1;
  const int tx = threadIdx.x % 64, ty = threadIdx.x / 64;
  __shared__ T v_rows[kStripe];
  __shared__ T col_red[4][64];
  __shared__ T row_red[kStripe][65];  // padded against bank conflicts
  if (threadIdx.x < kStripe) v_rows[threadIdx.x] = r0 + threadIdx.x < m ? v[r0 + threadIdx.x] : T(0);
  __syncthreads();
  T row_acc[kRowsPerThread];
#pragma unroll
  for (int q = 0; q < kRowsPerThread; ++q) row_acc[q] = 0;
  for (int64_t cc = c0; cc < c1; cc += 64) {
    const int64_t c = cc + tx;
    T col_acc = 0;
    if (c < c1) {
      const T vc = v[c];
#pragma unroll
      for (int q = 0; q < kRowsPerThread; ++q) {
        const int64_t r = r0 + ty + 4 * q;
        if (r < r1 && c <= r) {
          const T x = a[r * ld + c];
          row_acc[q] += x * vc;
          if (c < r) col_acc += x * v_rows[r - r0];
        }
      }
    }
    col_red[ty][tx] = col_acc;
    __syncthreads();
    if (ty == 0 && c < c1) col_parts[b * m + c] = ((col_red[0][tx] + col_red[1][tx]) + col_red[2][tx]) + col_red[3][tx];
    __syncthreads();
  }
#pragma unroll
  for (int q = 0; q < kRowsPerThread; ++q) row_red[ty + 4 * q][tx] = row_acc[q];
  __syncthreads();
  if (threadIdx.x < kStripe && r0 + threadIdx.x < r1) {
    T sum = 0;
    for (int t = 0; t < 64; ++t) sum += row_red[threadIdx.x][t];
    row_parts[s * m + r0 + threadIdx.x] = sum;
  }
}

// p[c] = Σ_s rows[s][c] (segments up to c's stripe end) + Σ_{b >= stripe of c} cols[b][c].
template <typename T>
__global__ void symv_lower_combine(int64_t m, const T* row_parts, const T* col_parts, T* p) {
  const int64_t stripes = symv_lower_stripes(m);
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < m; c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = c / kStripe;
    const int64_t stripe_end = (b + 1) * kStripe < m ? (b + 1) * kStripe : m;
    T sum = 0;
    for (int64_t s = 0; s * kSegment < stripe_end; ++s) sum += row_parts[s * m + c];
    for (int64_t q = b; q < stripes; ++q) sum += col_parts[q * m + c];
    p[c] = sum;
  }
}

}  // namespace hpcolls
