// Issue #45's other question about the fused column loop (docs/PERFORMANCE.md#fused-sytrd): how
// much of a column's time are its seven grid barriers? Times cooperative groups' grid.sync() in a
// cooperative launch of `--blocks` blocks of 256 threads (16: the fused loop's grid at 4 ranks on
// one H100; also the whole GPU, one block an SM), alone and with `--streams` such grids at once on
// their own streams (the ranks' fused kernels sharing the GPU), µs per barrier. A diagnostic for
// docs/PERFORMANCE.md, not part of the modules.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o grid_barrier native/solvers/bench/grid_barrier.cu
//   ./grid_barrier [--blocks 16] [--streams 4] [--barriers 20000]
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_device.h"

namespace {

namespace cg = cooperative_groups;

using solvers_bench::check;

// `barriers` grid barriers back to back; a counter bumped between them keeps each one real.
__global__ void __launch_bounds__(256) barriers_kernel(int barriers, unsigned* counter) {
  cg::grid_group grid = cg::this_grid();
  for (int i = 0; i < barriers; ++i) {
    if (threadIdx.x == 0) atomicAdd(counter, 1u);
    grid.sync();
  }
}

// µs per barrier: `n` grids of `blocks` blocks at once, each making `barriers` barriers.
double per_barrier(int blocks, int n, int barriers, const std::vector<cudaStream_t>& streams, unsigned* counters) {
  const double ms = solvers_bench::concurrent_ms(streams, n, [&](int k, cudaStream_t stream) {
    unsigned* counter = counters + k;
    int count = barriers;
    void* args[] = {&count, &counter};
    check(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(barriers_kernel), dim3(unsigned(blocks)), dim3(256),
                                      args, 0, stream),
          "cudaLaunchCooperativeKernel");
  });
  return ms * 1e3 / barriers;
}

}  // namespace

int main(int argc, char** argv) {
  int blocks = 16, streams = 4, barriers = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--blocks")) blocks = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--streams")) streams = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--barriers")) barriers = std::atoi(argv[i + 1]);
    else { std::fprintf(stderr, "unknown argument %s\n", argv[i]); return 2; }
  }
  cudaDeviceProp prop{};
  if (!solvers_bench::first_gpu(prop)) return 0;
  if (blocks < 1 || streams < 1 || barriers < 1 || blocks * streams > prop.multiProcessorCount) {
    std::fprintf(stderr, "grid_barrier: blocks x streams must fit one block an SM (%d SMs), all at least 1\n",
                 prop.multiProcessorCount);
    return 2;
  }
  std::vector<cudaStream_t> stream(static_cast<size_t>(streams));
  for (auto& s : stream) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  unsigned* counters = nullptr;
  check(cudaMalloc(&counters, size_t(streams) * sizeof(unsigned)), "cudaMalloc");
  std::printf("%s, %d SMs: grid.sync() of a cooperative launch, 256 threads a block, %d barriers, medians of 5\n",
              prop.name, prop.multiProcessorCount, barriers);
  std::printf("%8s %8s %14s\n", "blocks", "grids", "us/barrier");
  const int whole = prop.multiProcessorCount;
  for (const int b : {blocks, whole / streams, whole}) {
    for (const int n : {1, streams}) {
      if (b * n > whole) continue;
      std::printf("%8d %8d %14.3f\n", b, n, per_barrier(b, n, barriers, stream, counters));
    }
  }
  cudaFree(counters);
  for (auto& s : stream) cudaStreamDestroy(s);
  return 0;
}
