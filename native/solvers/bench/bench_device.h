// What the diagnostics of native/solvers/bench share: a failed CUDA call ends the program saying
// which, the first GPU's properties (or SKIP printed where there is no GPU), and the timing of
// work on several streams at once.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace solvers_bench {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// GPU 0's properties into `prop`; false (having printed SKIP) where there is no GPU.
inline bool first_gpu(cudaDeviceProp& prop) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device here\n");
    return false;
  }
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  return true;
}

// Milliseconds from the start of `enqueue(k, streams[k])` for k < n, all released at once, until
// every stream has finished it; the median of 5 after a warm-up.
template <class Enqueue>
double concurrent_ms(const std::vector<cudaStream_t>& streams, int n, Enqueue enqueue) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> samples;
  for (int sample = 0; sample < 6; ++sample) {  // the first warms up
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaEventRecord(start, streams[0]), "cudaEventRecord");
    for (int k = 1; k < n; ++k) check(cudaStreamWaitEvent(streams[size_t(k)], start), "cudaStreamWaitEvent");
    for (int k = 0; k < n; ++k) enqueue(k, streams[size_t(k)]);
    for (int k = 1; k < n; ++k) {
      cudaEvent_t joined;
      check(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming), "cudaEventCreate");
      check(cudaEventRecord(joined, streams[size_t(k)]), "cudaEventRecord");
      check(cudaStreamWaitEvent(streams[0], joined), "cudaStreamWaitEvent");
      check(cudaEventDestroy(joined), "cudaEventDestroy");
    }
    check(cudaEventRecord(stop, streams[0]), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    check(cudaGetLastError(), "launch");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (sample > 0) samples.push_back(double(ms));
  }
  check(cudaEventDestroy(start), "cudaEventDestroy");
  check(cudaEventDestroy(stop), "cudaEventDestroy");
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace solvers_bench
