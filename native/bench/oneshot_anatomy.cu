// Where the device time of a small one-shot AllReduce goes: a ladder of kernels, each adding one
// thing the real kernel does (its by-value DevComm argument, the counter read, the clock read of
// the poll deadline, the payload load and store, the end-of-call epoch store), timed the way
// hpcolls.bench times the real one (a CUDA graph of many launches on one stream, median µs per
// launch over replays), with the real kernel (linked from native/hpcolls) last: at one rank (a copy)
// and at two and four ranks looped back onto this one process (the protocol without other processes).
// Beside it, the host's enqueue time per launch of the same kernel (launches in a loop, no
// graph): what the argument block costs the CPU, apart from pybind11 and Python.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Inative/include native/bench/oneshot_anatomy.cu \
//        native/hpcolls/allreduce_oneshot.cu native/hpcolls/allreduce_oneshot_small.cu -o oneshot_anatomy
//   ./oneshot_anatomy [launches] [replays]
//   ./oneshot_anatomy --profile    (three plain launches of every row, to run under ncu)
//
// A diagnostic for docs/PERFORMANCE.md, not part of the module. One GPU, one process.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/device_clock.cuh"
#include "hpcolls/errors.h"
#include "hpcolls/ll_line.cuh"
#include "hpcolls/reduce_ops.cuh"
#include "hpcolls/types.h"

using hpcolls::cuda_check;
using hpcolls::DevComm;

namespace {

__global__ void empty_no_arguments() {}

// kStage: 0 the arguments alone; 1 + read the counters; 2 + the epoch store after a block
// barrier; 3 + the clock read; 4 + thread 0 loads 8 bytes and stores them (the whole ladder).
template <int kStage>
__global__ void ladder(DevComm c, const char* send, char* recv, size_t bytes, bool vec_ok) {
  uint2 mine{};
  if (kStage >= 4 && threadIdx.x == 0) mine = *reinterpret_cast<const uint2*>(send);
  uint32_t epoch = 0;
  if (kStage >= 1) {
    const volatile hpcolls::DeviceCounters* k = c.counters;
    epoch = k->epoch + 1;
    if (k->error) return;
  }
  if (kStage >= 3 && hpcolls::global_timer_ns() + c.timeout_ns == 0) return;  // never true; keeps the read
  if (kStage >= 4 && threadIdx.x == 0) *reinterpret_cast<uint2*>(recv) = mine;
  if (kStage >= 2) {
    __syncthreads();
    if (threadIdx.x == 0) c.counters->epoch = epoch;
  }
}

// Stage 2 of the ladder (counters read, then the epoch stored after a block barrier) with the
// counters read another way: kHow 0 volatile (ld.volatile, as the real kernels; a strong .sys
// load), 1 ld.relaxed.gpu (the counters are written only by kernels of this GPU), 2 a weak load.
template <int kHow>
__global__ void counter_read(DevComm c) {
  uint32_t epoch, error;
  const uint32_t* e = &c.counters->epoch;
  const int* x = &c.counters->error;
  if constexpr (kHow == 0) {
    epoch = static_cast<const volatile uint32_t*>(e)[0];
    error = static_cast<const volatile int*>(x)[0];
  } else if constexpr (kHow == 1) {
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(epoch) : "l"(e) : "memory");
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(error) : "l"(x) : "memory");
  } else {
    epoch = *e;
    error = uint32_t(*x);
  }
  if (error) return;
  __syncthreads();
  if (threadIdx.x == 0) c.counters->epoch = epoch + 1;
}

// The least a two-rank call of one float64 can do on the real kernel's path, as a floor under it:
// one thread loads the payload and the epoch, pushes one LL line (looped back, as below), polls
// for it with no time-out, combines by MAX's rules, and stores the result and the epoch. The
// same memory round trips as the real kernel, none of its generality (sizes, lanes, time-outs,
// a chunk as two lines).
__global__ void two_rank_floor(DevComm c, const char* send, char* recv) {
  hpcolls::wait_for_previous_kernel();
  hpcolls::allow_next_kernel_to_launch();
  if (threadIdx.x != 0) return;
  using Packet = hpcolls::LLPacket<0>;
  const uint2 mine = *reinterpret_cast<const uint2*>(send);
  const uint32_t epoch = static_cast<const volatile hpcolls::DeviceCounters*>(c.counters)->epoch + 1;
  const size_t half = (epoch & 1) ? c.half_bytes : 0;
  Packet::write(reinterpret_cast<hpcolls::LLLine*>(static_cast<char*>(c.scratch[1]) + half), mine.x, mine.y, epoch);
  const auto* from = reinterpret_cast<const hpcolls::LLLine*>(static_cast<char*>(c.scratch[0]) + half) + hpcolls::kLinesPerChunk;
  Packet pk;
  do pk = Packet::read(from);
  while (!pk.holds(epoch));
  const ulonglong2 w = pk.words;
  const double a = __longlong_as_double((long long)(uint64_t(mine.y) << 32 | mine.x));
  const double b = __longlong_as_double((long long)(uint64_t(uint32_t(w.y)) << 32 | uint32_t(w.x)));
  *reinterpret_cast<double*>(recv) = hpcolls::Reduce<double, hpcolls::Op::Max>::apply(a, b);
  c.counters->epoch = epoch;
}

// Median µs per launch over `replays` replays of a graph of `launches` launches of `launch`.
double graph_us(cudaStream_t s, int launches, int replays, const std::function<void()>& launch) {
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture");
  for (int i = 0; i < launches; ++i) launch();
  cuda_check(cudaStreamEndCapture(s, &g), "end capture");
  cuda_check(cudaGraphInstantiate(&exec, g, 0), "instantiate");
  cudaEvent_t a, b;
  cuda_check(cudaEventCreate(&a), "event");
  cuda_check(cudaEventCreate(&b), "event");
  std::vector<float> us;
  for (int r = 0; r < replays + 5; ++r) {  // the first five are warm-up
    cuda_check(cudaEventRecord(a, s), "record");
    cuda_check(cudaGraphLaunch(exec, s), "graph launch");
    cuda_check(cudaEventRecord(b, s), "record");
    cuda_check(cudaEventSynchronize(b), "sync");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    if (r >= 5) us.push_back(1e3f * ms / launches);
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  return us[us.size() / 2];
}

// Median host µs per enqueue over 15 loops of `launches` launches (the device keeps up: each
// kernel is shorter than its launch, so the queue never fills and the loop measures the CPU).
double enqueue_us(cudaStream_t s, int launches, const std::function<void()>& launch) {
  std::vector<double> us;
  for (int r = 0; r < 16; ++r) {  // the first is warm-up
    cuda_check(cudaStreamSynchronize(s), "sync");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) launch();
    const auto t1 = std::chrono::steady_clock::now();
    if (r > 0) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / launches);
  }
  cuda_check(cudaStreamSynchronize(s), "sync");
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const bool profile = argc > 1 && std::string(argv[1]) == "--profile";
  const int launches = argc > 1 && !profile ? std::atoi(argv[1]) : 200;
  const int replays = argc > 2 ? std::atoi(argv[2]) : 51;
  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");

  // A one-rank communicator as the native layer builds one: own scratch, zeroed counters,
  // the error record in host-mapped memory.
  DevComm c{};
  const size_t half = 1 << 20;
  cuda_check(cudaMalloc(&c.scratch[0], 2 * half), "scratch");
  cuda_check(cudaMemset(c.scratch[0], 0, 2 * half), "scratch");
  cuda_check(cudaMalloc(&c.counters, sizeof(hpcolls::DeviceCounters)), "counters");
  cuda_check(cudaMemset(c.counters, 0, sizeof(hpcolls::DeviceCounters)), "counters");
  hpcolls::ErrorRecord* host_error;
  cuda_check(cudaHostAlloc(&host_error, sizeof(*host_error), cudaHostAllocMapped), "error record");
  cuda_check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&c.host_error), host_error, 0), "error record");
  c.half_bytes = half;
  c.timeout_ns = 10'000'000'000ull;
  c.rank = 0;
  c.nranks = 1;
  c.lane_shift = hpcolls::oneshot_lane_shift(1);
  char* buf;
  cuda_check(cudaMalloc(&buf, 1024), "buffer");
  cuda_check(cudaMemset(buf, 0, 1024), "buffer");

  // The real kernel on `comm`, `bytes` in place, one block of one thread per lane of a chunk,
  // launched as a programmatic dependent of the kernel before it or in plain stream order.
  const auto real = [&](const DevComm& comm, size_t bytes, bool dependent = false) {
    const int threads = int(((bytes + 15) / 16 << comm.lane_shift) + 31) / 32 * 32;
    hpcolls::CollectiveArgs a{buf, buf, bytes, true, 1, threads, s, dependent};
    return [=] { cuda_check(hpcolls::launch_allreduce_oneshot(comm, hpcolls::DType::F64, hpcolls::Op::Max, a), "launch"); };
  };
  // The same on the small-message kernel (a thread per chunk, the rank count compiled in), which
  // the dispatcher picks for such calls (oneshot_small_fits): the "real" rows are the general one.
  const auto small = [&](const DevComm& comm, size_t bytes, bool dependent = false) {
    const int threads = int((bytes + 15) / 16 + 31) / 32 * 32;
    hpcolls::CollectiveArgs a{buf, buf, bytes, true, 1, threads, s, dependent};
    return [=] { cuda_check(hpcolls::launch_allreduce_oneshot_small(comm, hpcolls::DType::F64, hpcolls::Op::Max, a), "launch"); };
  };
  // N ranks looped back onto this process: "rank q"'s scratch is mapped q slots above ours, so
  // our push to rank q (into its slot 0, ours) lands exactly where we then poll for rank q's
  // data. The whole N-rank protocol path runs (epoch, push, poll, rank-order reduce, epoch
  // advance) without other processes, so MPS co-scheduling and the peers' skew are out of the
  // figure.
  const auto looped_comm = [&](size_t bytes, int ranks) {
    DevComm many = c;
    many.nranks = ranks;
    many.lane_shift = hpcolls::oneshot_lane_shift(ranks);
    const size_t slot_bytes = (bytes + 15) / 16 * hpcolls::kLinesPerChunk * 16;
    for (int q = 1; q < ranks; ++q) many.scratch[q] = static_cast<char*>(c.scratch[0]) + q * slot_bytes;
    return many;
  };
  const auto looped_back = [&](size_t bytes, int ranks, bool dependent = false) {
    return real(looped_comm(bytes, ranks), bytes, dependent);
  };
  const auto floor_of_two = [&](bool dependent) {
    const DevComm two = looped_comm(8, 2);
    return [=] {
      cudaLaunchAttribute attr;
      attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr.val.programmaticStreamSerializationAllowed = 1;
      cudaLaunchConfig_t cfg{};
      cfg.gridDim = dim3(1);
      cfg.blockDim = dim3(32);
      cfg.stream = s;
      cfg.attrs = dependent ? &attr : nullptr;
      cfg.numAttrs = dependent ? 1 : 0;
      cuda_check(cudaLaunchKernelEx(&cfg, two_rank_floor, two, static_cast<const char*>(buf), buf), "launch");
    };
  };
  struct Row { const char* what; std::function<void()> launch; };
  const std::vector<Row> rows = {
      {"empty kernel, no arguments, 1x32", [&] { empty_no_arguments<<<1, 32, 0, s>>>(); }},
      {"+ the real kernel's arguments (DevComm by value)", [&] { ladder<0><<<1, 32, 0, s>>>(c, buf, buf, 8, true); }},
      {"+ read the device counters (epoch, error)", [&] { ladder<1><<<1, 32, 0, s>>>(c, buf, buf, 8, true); }},
      {"+ block barrier, epoch store", [&] { ladder<2><<<1, 32, 0, s>>>(c, buf, buf, 8, true); }},
      {"  the same, counters read volatile (strong .sys), by themselves", [&] { counter_read<0><<<1, 32, 0, s>>>(c); }},
      {"  the same, counters read ld.relaxed.gpu", [&] { counter_read<1><<<1, 32, 0, s>>>(c); }},
      {"  the same, counters read by a weak load", [&] { counter_read<2><<<1, 32, 0, s>>>(c); }},
      {"+ %globaltimer read (poll deadline)", [&] { ladder<3><<<1, 32, 0, s>>>(c, buf, buf, 8, true); }},
      {"+ 8-byte payload load and store", [&] { ladder<4><<<1, 32, 0, s>>>(c, buf, buf, 8, true); }},
      {"real one-shot kernel, one rank (a copy), 1 x float64 MAX", real(c, 8)},
      {"real one-shot kernel, one rank (a copy), 128 x float64 MAX (1 KiB)", real(c, 1024)},
      {"real one-shot kernel, two ranks looped back, 1 x float64 MAX", looped_back(8, 2)},
      {"real one-shot kernel, two ranks looped back, 128 x float64 MAX (1 KiB)", looped_back(1024, 2)},
      {"real one-shot kernel, four ranks looped back, 1 x float64 MAX", looped_back(8, 4)},
      {"real one-shot kernel, four ranks looped back, 128 x float64 MAX (1 KiB)", looped_back(1024, 4)},
      {"small-message kernel, two ranks looped back, 1 x float64 MAX", small(looped_comm(8, 2), 8)},
      {"small-message kernel, two ranks looped back, 128 x float64 MAX (1 KiB)", small(looped_comm(1024, 2), 1024)},
      {"small-message kernel, four ranks looped back, 1 x float64 MAX", small(looped_comm(8, 4), 8)},
      {"small-message kernel, four ranks looped back, 128 x float64 MAX (1 KiB)", small(looped_comm(1024, 4), 1024)},
      {"two-rank floor (one thread, one LL line, no time-out), looped back, 1 x float64", floor_of_two(false)},
      {"the same, one rank (a copy), 1 x float64, programmatic dependent launch", real(c, 8, true)},
      {"the same, two ranks looped back, 1 x float64, programmatic dependent launch", looped_back(8, 2, true)},
      {"the same, two ranks looped back, 1 KiB, programmatic dependent launch", looped_back(1024, 2, true)},
      {"the same, four ranks looped back, 1 x float64, programmatic dependent launch", looped_back(8, 4, true)},
      {"the same, small-message kernel, two ranks looped back, 1 x float64, dependent launch", small(looped_comm(8, 2), 8, true)},
      {"the same, small-message kernel, two ranks looped back, 1 KiB, dependent launch", small(looped_comm(1024, 2), 1024, true)},
      {"the same, small-message kernel, four ranks looped back, 1 x float64, dependent launch", small(looped_comm(8, 4), 8, true)},
      {"two-rank floor, programmatic dependent launch", floor_of_two(true)},
  };
  if (profile) {  // a few plain launches of every row, for Nsight Compute's per-kernel counters
    for (const Row& r : rows)
      for (int k = 0; k < 3; ++k) r.launch();
    cuda_check(cudaDeviceSynchronize(), "final sync");
    return 0;
  }
  std::printf("# one-shot anatomy (one process): CUDA graph of %d launches, median of %d replays\n", launches, replays);
  std::printf("| kernel | device us per launch (graph) | host us per enqueue (loop of 2000) |\n| --- | --- | --- |\n");
  for (const Row& r : rows)
    std::printf("| %s | %.3f | %.3f |\n", r.what, graph_us(s, launches, replays, r.launch), enqueue_us(s, 2000, r.launch));
  cuda_check(cudaDeviceSynchronize(), "final sync");
  return 0;
}
