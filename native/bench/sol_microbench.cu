// Speed of light for the LL protocol on this machine: what one flag costs to read, to write and
// to see on another GPU, against which hpcolls' kernel times are judged (the model of
// docs/ARCHITECTURE.md#targets-and-floors).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Inative/include native/bench/sol_microbench.cu -o sol_microbench && ./sol_microbench [rounds]
//
// Rows, for GPU 0 and each GPU it can reach by peer access (itself included):
//   load:      dependent volatile loads of a line in that GPU's memory (L2-resident after the
//              first), ns per load: an L2 round trip locally, an NVLink round trip remotely.
//   fence:     a store there followed by __threadfence_system(), ns per pair: the seed paper's
//              store-visibility proxy.
//   ping-pong: one block on GPU 0 and one on the other GPU (two blocks of one kernel when it is
//              GPU 0 itself) pass a counter back and forth through flags in each other's memory;
//              one-way latency = time / (2 x rounds - 1): the remote-store-to-poll latency an LL line
//              pays once per one-shot call.
// A diagnostic for docs/PERFORMANCE.md, not part of the module. Every spin is bounded (about 2 s),
// so a GPU pair that cannot see each other's stores reports a time-out instead of hanging.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hpcolls/device_clock.cuh"
#include "hpcolls/errors.h"

using hpcolls::cuda_check;
using hpcolls::global_timer_ns;

namespace {

// The line holds its own address, so each load depends on the one before.
__global__ void chase(const uint64_t* line, int n, uint64_t* ns_out) {
  const uint64_t* p = line;
  const uint64_t t0 = global_timer_ns();
  for (int i = 0; i < n; ++i) p = reinterpret_cast<const uint64_t*>(*reinterpret_cast<const volatile uint64_t*>(p));
  const uint64_t t1 = global_timer_ns();
  ns_out[0] = t1 - t0;
  ns_out[1] = reinterpret_cast<uint64_t>(p);  // keeps the chain
}

__global__ void store_fence(volatile uint64_t* where, int n, uint64_t* ns_out) {
  const uint64_t t0 = global_timer_ns();
  for (int i = 0; i < n; ++i) {
    *where = i;
    __threadfence_system();
  }
  ns_out[0] = global_timer_ns() - t0;
}

// Block b waits for its flag to reach its turn, then writes the next value into the other side's
// flag. mine[b] is read locally; theirs[b] is the other side's flag (possibly on another GPU).
__device__ bool ping_pong_side(volatile uint64_t* mine, volatile uint64_t* theirs, int rounds, bool starts) {
  const uint64_t deadline = global_timer_ns() + 2'000'000'000ull;
  for (int r = 0; r < rounds; ++r) {
    const uint64_t want = 2ull * r + (starts ? 0 : 1);
    if (!(starts && r == 0)) {
      while (*mine < want)
        if (global_timer_ns() > deadline) return false;
    }
    *theirs = want + 1;
  }
  return true;
}

// out[0]: the starting side's time; out[1]: sides that timed out (zeroed by the host).
// Two sides in one kernel (one GPU): block 0 starts.
__global__ void ping_pong_local(volatile uint64_t* flag0, volatile uint64_t* flag1, int rounds, uint64_t* out) {
  if (threadIdx.x != 0) return;
  const uint64_t t0 = global_timer_ns();
  const bool ok = blockIdx.x == 0 ? ping_pong_side(flag0, flag1, rounds, true) : ping_pong_side(flag1, flag0, rounds, false);
  if (blockIdx.x == 0) out[0] = global_timer_ns() - t0;
  if (!ok) atomicAdd(reinterpret_cast<unsigned long long*>(out + 1), 1ull);
}

// One side per GPU: each launched on its own device, concurrently.
__global__ void ping_pong_remote(volatile uint64_t* mine, volatile uint64_t* theirs, int rounds, bool starts, uint64_t* out) {
  const uint64_t t0 = global_timer_ns();
  const bool ok = ping_pong_side(mine, theirs, rounds, starts);
  out[0] = global_timer_ns() - t0;
  out[1] = ok ? 0 : 1;
}

double chase_ns(int target, int rounds) {
  cuda_check(cudaSetDevice(target), "set device");
  uint64_t* line;
  cuda_check(cudaMalloc(&line, 128), "malloc line");
  cuda_check(cudaMemcpy(line, &line, sizeof(line), cudaMemcpyHostToDevice), "line");
  cuda_check(cudaSetDevice(0), "set device");
  uint64_t* out;
  cuda_check(cudaMalloc(&out, 16), "malloc out");
  chase<<<1, 1>>>(line, 16, out);  // warm-up: brings the line into the caches
  chase<<<1, 1>>>(line, rounds, out);
  uint64_t host[2];
  cuda_check(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost), "chase");
  cudaFree(out);
  cuda_check(cudaSetDevice(target), "set device");
  cudaFree(line);
  cuda_check(cudaSetDevice(0), "set device");
  return double(host[0]) / rounds;
}

double fence_ns(int target, int rounds) {
  cuda_check(cudaSetDevice(target), "set device");
  uint64_t* where;
  cuda_check(cudaMalloc(&where, 128), "malloc");
  cuda_check(cudaSetDevice(0), "set device");
  uint64_t* out;
  cuda_check(cudaMalloc(&out, 16), "malloc out");
  store_fence<<<1, 1>>>(where, 16, out);
  store_fence<<<1, 1>>>(where, rounds, out);
  uint64_t ns;
  cuda_check(cudaMemcpy(&ns, out, sizeof(ns), cudaMemcpyDeviceToHost), "fence");
  cudaFree(out);
  cuda_check(cudaSetDevice(target), "set device");
  cudaFree(where);
  cuda_check(cudaSetDevice(0), "set device");
  return double(ns) / rounds;
}

// One-way ns, or a negative number on time-out.
double ping_pong_ns(int other, int rounds) {
  uint64_t *flag0, *flag1, *out0, *out1;
  cuda_check(cudaSetDevice(0), "set device");
  cuda_check(cudaMalloc(&flag0, 128), "malloc");
  cuda_check(cudaMemset(flag0, 0, 128), "memset");
  cuda_check(cudaMalloc(&out0, 16), "malloc");
  cuda_check(cudaMemset(out0, 0, 16), "memset");
  cuda_check(cudaSetDevice(other), "set device");
  cuda_check(cudaMalloc(&flag1, 128), "malloc");
  cuda_check(cudaMemset(flag1, 0, 128), "memset");
  cuda_check(cudaMalloc(&out1, 16), "malloc");
  cuda_check(cudaMemset(out1, 0, 16), "memset");
  cuda_check(cudaDeviceSynchronize(), "sync");
  uint64_t host[2] = {0, 0};
  if (other == 0) {
    cuda_check(cudaSetDevice(0), "set device");
    ping_pong_local<<<2, 32>>>(flag0, flag1, rounds, out0);
    cuda_check(cudaDeviceSynchronize(), "ping-pong");
    cuda_check(cudaMemcpy(host, out0, sizeof(host), cudaMemcpyDeviceToHost), "result");
  } else {
    cudaStream_t s0, s1;
    cuda_check(cudaSetDevice(other), "set device");
    cuda_check(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), "stream");
    ping_pong_remote<<<1, 1, 0, s1>>>(flag1, flag0, rounds, false, out1);
    cuda_check(cudaSetDevice(0), "set device");
    cuda_check(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), "stream");
    ping_pong_remote<<<1, 1, 0, s0>>>(flag0, flag1, rounds, true, out0);
    cuda_check(cudaStreamSynchronize(s0), "ping-pong");
    cuda_check(cudaMemcpy(host, out0, sizeof(host), cudaMemcpyDeviceToHost), "result");
    cuda_check(cudaSetDevice(other), "set device");
    cuda_check(cudaStreamSynchronize(s1), "ping-pong");
    uint64_t other_side[2];
    cuda_check(cudaMemcpy(other_side, out1, sizeof(other_side), cudaMemcpyDeviceToHost), "result");
    host[1] += other_side[1];
    cudaStreamDestroy(s1);
    cuda_check(cudaSetDevice(0), "set device");
    cudaStreamDestroy(s0);
  }
  cudaFree(flag0);
  cudaFree(out0);
  cuda_check(cudaSetDevice(other), "set device");
  cudaFree(flag1);
  cudaFree(out1);
  cuda_check(cudaSetDevice(0), "set device");
  // The starting side's time spans 2 x rounds - 1 one-way trips (it does not wait for the last).
  return host[1] == 0 ? double(host[0]) / (2.0 * rounds - 1) : -1.0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 10000;
  int ngpu = 0;
  cuda_check(cudaGetDeviceCount(&ngpu), "device count");
  std::vector<int> targets = {0};
  for (int d = 1; d < ngpu; ++d) {
    int can = 0;
    cuda_check(cudaDeviceCanAccessPeer(&can, 0, d), "can access peer");
    if (!can) {
      std::printf("# GPU %d: no peer access from GPU 0, skipped\n", d);
      continue;
    }
    cuda_check(cudaSetDevice(0), "set device");
    cuda_check(cudaDeviceEnablePeerAccess(d, 0), "enable peer access 0->d");
    cuda_check(cudaSetDevice(d), "set device");
    cuda_check(cudaDeviceEnablePeerAccess(0, 0), "enable peer access d->0");
    cuda_check(cudaSetDevice(0), "set device");
    targets.push_back(d);
  }
  std::printf("# speed of light from GPU 0 (%d GPU(s) visible), %d rounds per figure\n", ngpu, rounds);
  std::printf("| target | dependent load, ns | store + fence.sys, ns | ping-pong one way, ns |\n| --- | --- | --- | --- |\n");
  for (const int t : targets) {
    const double pp = ping_pong_ns(t, rounds);
    std::printf("| GPU %d%s | %.0f | %.0f | %s |\n", t, t == 0 ? " (itself: L2)" : "", chase_ns(t, rounds),
                fence_ns(t, rounds), pp < 0 ? "time-out" : std::to_string(int(pp + 0.5)).c_str());
  }
  return 0;
}
