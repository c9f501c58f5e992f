// Issue #47's floor question: what a blocking call on device buffers costs the host before any
// collective work, by the ways a host can hand work to the GPU and learn it finished.
//   launch_sync:  an empty kernel on the legacy stream, then cudaStreamSynchronize (what every
//                 blocking call through a kernel pays today);
//   launch_flag:  the same kernel writes a flag in mapped host memory; the host spins on it;
//   stream_query: cudaStreamQuery on the idle legacy stream.
// Then a kernel already running (one warp) answers each call the host rings, in the forms the
// PMPI library's resident kernel (HPCOLLS_PMPI_RESIDENT_US) took and parts of them, to tell what
// each piece of an answer costs:
//   the bell:   `host`, a word in mapped host memory the host writes and the kernel polls, or
//               `stream`, a word in device memory rung by cuStreamWriteValue32 on the legacy
//               stream (ordered after that stream's work), polled with an acquire load;
//   the call:   its 8 words read from mapped host memory by one thread in turn (`serial`), by 8
//               threads at once (`parallel`), or not read;
//   the fences: system fences before the answer: the first form's three (after the bell, after
//               the words, after a status store), or one;
//   the answer: one 8-byte store into mapped host memory, which the host spins on.
// Every rank measures at once (ranks sharing the GPU under MPS see each other's load); each batch's
// time is the slowest rank's, the median of the batches is printed.
//
//   nvcc -ccbin mpicxx -std=c++17 -O2 -Inative/include -o doorbell_latency native/bench/doorbell_latency.cu
//   mpiexec -n 2 ./doorbell_latency [--calls N] [--batches B]
#include <cuda_runtime.h>
#include <mpi.h>

#include "hpcolls/stream_write.h"
#include "mpi_timing.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using hpcolls::bench::per_call;

__global__ void empty_kernel() {}

__global__ void flag_kernel(volatile unsigned* flag, unsigned value) {
  __threadfence_system();
  *flag = value;
}

enum class Read : int { None, Serial, Parallel };

// How the kernel is rung and how it answers (the top of the file).
struct Form {
  const char* name;
  bool stream_bell;
  Read read;
  int fences;  // 0, 1 or 3
  const char* what;
};

constexpr unsigned kStop = 0xffffffffu;

// Answers each new sequence number rung in `device_bell` (or `host_bell`) with it, in `answer`,
// reading the call's `words` and fencing as `read` and `fences` say; kStop ends it. One warp.
__global__ void bell_kernel(const unsigned* device_bell, const volatile unsigned* host_bell,
                            volatile unsigned long long* answer, const volatile unsigned long long* words,
                            volatile int* status, Read read, int fences) {
  const unsigned lane = threadIdx.x;
  unsigned seen = 0;
  for (;;) {
    unsigned s;
    if (device_bell != nullptr)
      asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(s) : "l"(device_bell) : "memory");
    else
      s = *host_bell;
    s = __shfl_sync(0xffffffffu, s, 0);  // lane 0's view on every lane: the warp stays converged
    if (s == seen) continue;
    if (s == kStop) return;
    seen = s;
    if (fences == 3) __threadfence_system();
    unsigned long long sum = 0;  // the words summed into the answer, so that the loads stay
    if (read == Read::Serial && lane == 0)
      for (int w = 0; w < 8; ++w) sum += words[w];
    if (read == Read::Parallel) {
      if (lane < 8) sum = words[lane];
      for (int d = 4; d > 0; d /= 2) sum += __shfl_down_sync(0xffffffffu, sum, d);
    }
    if (fences == 3 && lane == 0) {
      __threadfence_system();
      *status = int(sum & 1);
      __threadfence_system();
    }
    if (fences >= 1) __threadfence_system();
    if (lane == 0) *answer = (sum & 1) << 32 | s;
    __syncwarp();
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

void spin_until(volatile unsigned* word, unsigned value) {
  while (*word != value) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int calls = 2000, batches = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--calls")) calls = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--batches")) batches = std::atoi(argv[i + 1]);
  }
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (rank == 0) std::printf("SKIP: no CUDA device here\n");
    MPI_Finalize();
    return 0;
  }
  check(cudaSetDevice(rank % devices), "cudaSetDevice");
  unsigned* flag_host = nullptr;  // launch_flag's flag
  check(cudaHostAlloc(&flag_host, sizeof(unsigned), cudaHostAllocMapped), "cudaHostAlloc");
  *flag_host = 0;
  unsigned* flag_dev = nullptr;
  check(cudaHostGetDevicePointer(&flag_dev, flag_host, 0), "cudaHostGetDevicePointer");
  volatile unsigned* flag = flag_host;

  const double launch_sync = per_call(batches, calls, [] {
    empty_kernel<<<1, 1>>>();
    cudaStreamSynchronize(nullptr);
  });
  unsigned next = 0;
  const double launch_flag = per_call(batches, calls, [&] {
    flag_kernel<<<1, 1>>>(flag_dev, ++next);
    spin_until(flag, next);
  });
  check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  const double stream_query = per_call(batches, calls, [] { (void)cudaStreamQuery(nullptr); });

  cudaStream_t service;
  check(cudaStreamCreateWithFlags(&service, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  // Mapped host memory: [0..7] the call's words, [8] the answer, [9] the host bell, [10] the status.
  unsigned long long* host = nullptr;
  check(cudaHostAlloc(&host, 11 * sizeof(unsigned long long), cudaHostAllocMapped), "cudaHostAlloc(call)");
  unsigned long long* dev = nullptr;
  check(cudaHostGetDevicePointer(&dev, host, 0), "cudaHostGetDevicePointer(call)");
  unsigned* device_bell = nullptr;
  check(cudaMalloc(&device_bell, sizeof(unsigned)), "cudaMalloc(bell)");
  const Form forms[] = {
      {"doorbell", false, Read::None, 0, "host bell, no words read, no fence"},
      {"doorbell_call", false, Read::Serial, 3, "host bell, 8 words read in turn, three fences: the first form"},
      {"doorbell_serial", false, Read::Serial, 1, "host bell, 8 words read in turn, one fence"},
      {"doorbell_parallel", false, Read::Parallel, 1, "host bell, 8 words read at once, one fence"},
      {"stream_bare", true, Read::None, 0, "stream bell, no words read, no fence"},
      {"stream_serial", true, Read::Serial, 1, "stream bell, 8 words read in turn, one fence: the second form"},
      {"stream_parallel", true, Read::Parallel, 1, "stream bell, 8 words read at once, one fence: the present form"},
  };
  std::vector<double> answered;
  for (const Form& f : forms) {
    if (f.stream_bell && !hpcolls::stream_write_available()) {
      answered.push_back(-1);
      continue;
    }
    std::memset(host, 0, 11 * sizeof(unsigned long long));
    check(cudaMemset(device_bell, 0, sizeof(unsigned)), "cudaMemset(bell)");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    volatile unsigned* host_bell = reinterpret_cast<volatile unsigned*>(host + 9);
    volatile unsigned long long* answer = host + 8;
    const auto ring = [&](unsigned value) {
      if (!f.stream_bell) {
        *host_bell = value;
      } else if (!hpcolls::stream_write_u32(cudaStreamLegacy, device_bell, value)) {
        std::fprintf(stderr, "cuStreamWriteValue32 refused\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    };
    bell_kernel<<<1, 32, 0, service>>>(f.stream_bell ? device_bell : nullptr,
                                       reinterpret_cast<const volatile unsigned*>(dev + 9), dev + 8, dev,
                                       reinterpret_cast<volatile int*>(dev + 10), f.read, f.fences);
    check(cudaGetLastError(), "launch(bell_kernel)");
    unsigned seq = 0;
    answered.push_back(per_call(batches, calls, [&] {
      ++seq;
      for (int w = 0; w < 8; ++w) host[w] = seq + w;
      ring(seq);
      while (unsigned(*answer) != seq) {
      }
    }));
    ring(kStop);
    check(cudaStreamSynchronize(service), "cudaStreamSynchronize(service)");
  }
  cudaFree(device_bell);
  cudaFreeHost(host);
  if (rank == 0) {
    std::printf("ranks %d, devices %d, %d batches of %d calls, slowest rank per batch, median:\n", size, devices,
                batches, calls);
    std::printf("  %-17s %8.2f us  (empty kernel, cudaStreamSynchronize)\n", "launch_sync", launch_sync * 1e6);
    std::printf("  %-17s %8.2f us  (kernel writes a mapped host flag, host spins)\n", "launch_flag", launch_flag * 1e6);
    std::printf("  %-17s %8.2f us  (cudaStreamQuery of the idle legacy stream)\n", "stream_query", stream_query * 1e6);
    for (size_t i = 0; i < answered.size(); ++i) {
      if (answered[i] >= 0)
        std::printf("  %-17s %8.2f us  (%s)\n", forms[i].name, answered[i] * 1e6, forms[i].what);
      else
        std::printf("  %-17s      n/a  (this driver has no stream memory operations)\n", forms[i].name);
    }
  }
  cudaStreamDestroy(service);
  cudaFreeHost(flag_host);
  MPI_Finalize();
  return 0;
}
