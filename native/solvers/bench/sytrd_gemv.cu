// Issue #45's question about the fused column loop's product (docs/PERFORMANCE.md#fused-sytrd:
// 57 µs a column at n = 4096 on 4 ranks, three times the kernel loop's): is the gemv starved of
// loads in flight on the fused loop's grid, and how many does it need? Times the solver's own
// step (sytrd_steps.cuh's local_gemv_part: a warp a row, four 8-byte loads in flight a lane)
// beside variants that keep more in flight, float64, on
//   fused:  the fused loop's grid, `--blocks` blocks of 256 threads (16: one an SM, a quarter of
//           the rank's share, as at 4 ranks on one H100), and
//   launch: the kernel loop's grid (a warp a row: rows / 8 blocks),
// each alone and with `--streams` copies at once on their own streams and matrices (the ranks'
// grids sharing the GPU's memory), µs per product and GB/s of matrix read per product.
// A diagnostic for docs/PERFORMANCE.md, not part of the modules; results are checked against the
// solver's step (same sums to rounding).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Inative/include -Inative/solvers -o sytrd_gemv native/solvers/bench/sytrd_gemv.cu
//   ./sytrd_gemv [--rows 2048] [--cols 2048] [--blocks 16] [--streams 4] [--reps 200]
// (2048 x 2048: a rank's whole block at n = 4096 on a 2 x 2 grid, the first column's product.)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_device.h"

#include "sytrd_steps.cuh"

namespace {

using solvers::sytrd::kThreads;
using solvers::sytrd::Slice;

using solvers_bench::check;

// The solver's step, as both loops run it.
__global__ void __launch_bounds__(kThreads) step_gemv(const double* a, int64_t ld, int64_t rows, int64_t cols,
                                                      const double* v, const int64_t* row_index, double* p) {
  solvers::sytrd::local_gemv_part(Slice::of_launch(), a, ld, rows, cols, v, row_index, int64_t(-1), p);
}

// A warp a row, kLoads 8-byte loads in flight a lane (kLoads accumulators), kRows rows a warp at once.
template <int kLoads, int kRows>
__global__ void __launch_bounds__(kThreads) inflight_gemv(const double* a, int64_t ld, int64_t rows, int64_t cols,
                                                          const double* v, double* p) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  for (int64_t r0 = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32 * kRows; r0 < rows; r0 += warps * kRows) {
    double s[kRows][kLoads] = {};
    int64_t c = lane;
    for (; c + 32 * (kLoads - 1) < cols; c += 32 * kLoads) {
#pragma unroll
      for (int q = 0; q < kRows; ++q) {
        const double* row = a + (r0 + q < rows ? r0 + q : rows - 1) * ld;  // past the end: a valid row, not stored
#pragma unroll
        for (int k = 0; k < kLoads; ++k) s[q][k] += row[c + 32 * k] * v[c + 32 * k];
      }
    }
    for (; c < cols; c += 32)
#pragma unroll
      for (int q = 0; q < kRows; ++q) s[q][0] += a[(r0 + q < rows ? r0 + q : rows - 1) * ld + c] * v[c];
#pragma unroll
    for (int q = 0; q < kRows; ++q) {
      double t = 0;
#pragma unroll
      for (int k = 0; k < kLoads; ++k) t += s[q][k];
      t = solvers::sytrd::warp_sum(t);
      if (lane == 0 && r0 + q < rows) p[r0 + q] = t;
    }
  }
}

struct Variant {
  const char* name;
  void (*launch)(unsigned blocks, cudaStream_t st, const double* a, int64_t ld, int64_t rows, int64_t cols,
                 const double* v, const int64_t* row_index, double* p);
};

template <int kLoads, int kRows>
void launch_inflight(unsigned blocks, cudaStream_t st, const double* a, int64_t ld, int64_t rows, int64_t cols,
                     const double* v, const int64_t*, double* p) {
  inflight_gemv<kLoads, kRows><<<blocks, kThreads, 0, st>>>(a, ld, rows, cols, v, p);
}

void launch_step(unsigned blocks, cudaStream_t st, const double* a, int64_t ld, int64_t rows, int64_t cols,
                 const double* v, const int64_t* row_index, double* p) {
  step_gemv<<<blocks, kThreads, 0, st>>>(a, ld, rows, cols, v, row_index, p);
}

const Variant kVariants[] = {
    {"step (4 loads)", launch_step},
    {"8 loads", launch_inflight<8, 1>},
    {"16 loads", launch_inflight<16, 1>},
    {"4 loads x 2 rows", launch_inflight<4, 2>},
    {"8 loads x 2 rows", launch_inflight<8, 2>},
};

struct Copy {  // one rank's matrix, vector and product
  double* a;
  double* v;
  double* p;
  int64_t* row_index;
  cudaStream_t stream;
};

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 2048, cols = 2048;
  int blocks = 16, streams = 4, reps = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rows")) rows = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cols")) cols = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--blocks")) blocks = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--streams")) streams = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else { std::fprintf(stderr, "unknown argument %s\n", argv[i]); return 2; }
  }
  if (rows < 1 || cols < 1 || blocks < 1 || streams < 1 || streams > 16 || reps < 1) {
    std::fprintf(stderr, "sytrd_gemv: rows, cols, blocks and reps at least 1, streams 1 to 16\n");
    return 2;
  }
  cudaDeviceProp prop{};
  if (!solvers_bench::first_gpu(prop)) return 0;
  const int64_t ld = cols;
  const size_t elems = size_t(rows) * size_t(ld);
  std::vector<double> host_a(elems), host_v(static_cast<size_t>(cols));
  uint64_t seed = 12345;
  auto next = [&] { seed = seed * 6364136223846793005ull + 1442695040888963407ull; return double(seed >> 11) / double(1ull << 53) - 0.5; };
  for (auto& x : host_a) x = next();
  for (auto& x : host_v) x = next();
  std::vector<int64_t> host_rows(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) host_rows[size_t(r)] = r;  // with j = -1: p[r] is row r's
  std::vector<Copy> copies(static_cast<size_t>(streams));
  for (Copy& c : copies) {
    check(cudaMalloc(&c.a, elems * sizeof(double)), "cudaMalloc(a)");
    check(cudaMalloc(&c.v, size_t(cols) * sizeof(double)), "cudaMalloc(v)");
    check(cudaMalloc(&c.p, size_t(rows) * sizeof(double)), "cudaMalloc(p)");
    check(cudaMalloc(&c.row_index, size_t(rows) * sizeof(int64_t)), "cudaMalloc(rows)");
    check(cudaMemcpy(c.a, host_a.data(), elems * sizeof(double), cudaMemcpyHostToDevice), "copy a");
    check(cudaMemcpy(c.v, host_v.data(), size_t(cols) * sizeof(double), cudaMemcpyHostToDevice), "copy v");
    check(cudaMemcpy(c.row_index, host_rows.data(), size_t(rows) * sizeof(int64_t), cudaMemcpyHostToDevice), "copy rows");
    check(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  const unsigned launch_blocks = unsigned(solvers::sytrd::gemv_blocks(rows));  // the kernel loop's grid
  std::printf("%s, %d SMs: %lld x %lld float64 (%.1f MiB a copy), fused grid %d blocks, launch grid %u blocks, "
              "%d reps, medians of 5\n",
              prop.name, prop.multiProcessorCount, (long long)rows, (long long)cols, double(elems) * 8 / 1048576.0,
              blocks, launch_blocks, reps);
  std::printf("%-18s %-7s %8s %12s %10s %12s\n", "variant", "grid", "copies", "us/product", "GB/s", "max |diff|");
  // The reference: the solver's step on copy 0.
  std::vector<double> want(static_cast<size_t>(rows)), got(static_cast<size_t>(rows));
  launch_step(launch_blocks, copies[0].stream, copies[0].a, ld, rows, cols, copies[0].v, copies[0].row_index, copies[0].p);
  check(cudaStreamSynchronize(copies[0].stream), "reference");
  check(cudaMemcpy(want.data(), copies[0].p, size_t(rows) * sizeof(double), cudaMemcpyDeviceToHost), "copy p");
  std::vector<cudaStream_t> streams_of;
  for (const Copy& c : copies) streams_of.push_back(c.stream);
  for (const Variant& var : kVariants) {
    for (const bool fused : {true, false}) {
      const unsigned grid = fused ? unsigned(blocks) : launch_blocks;
      for (const int n : streams > 1 ? std::vector<int>{1, streams} : std::vector<int>{1}) {
        const double us = solvers_bench::concurrent_ms(streams_of, n, [&](int k, cudaStream_t stream) {
          const Copy& c = copies[size_t(k)];
          for (int r = 0; r < reps; ++r) var.launch(grid, stream, c.a, ld, rows, cols, c.v, c.row_index, c.p);
        }) * 1e3 / reps;
        check(cudaMemcpy(got.data(), copies[0].p, size_t(rows) * sizeof(double), cudaMemcpyDeviceToHost), "copy p");
        double diff = 0;
        for (size_t r = 0; r < got.size(); ++r) diff = std::max(diff, std::fabs(got[r] - want[r]));
        // Bytes of matrix read per product, all copies together, per µs of one product's time.
        const double gbs = double(elems) * 8 * n / (us * 1e3);
        std::printf("%-18s %-7s %8d %12.2f %10.1f %12.2e\n", var.name, fused ? "fused" : "launch", n, us, gbs, diff);
      }
    }
  }
  for (Copy& c : copies) {
    cudaFree(c.a);
    cudaFree(c.v);
    cudaFree(c.p);
    cudaFree(c.row_index);
    cudaStreamDestroy(c.stream);
  }
  return 0;
}
