// Issue #47's floor question: what a blocking call on device buffers costs the host before any
// collective work, by the ways a host can hand work to the GPU and learn it finished.
//   launch_sync:  an empty kernel on the legacy stream, then cudaStreamSynchronize (what every
//                 blocking call through a kernel pays today);
//   launch_flag:  the same kernel writes a flag in mapped host memory; the host spins on it;
//   doorbell:     a kernel already running (one block) polls a sequence number in mapped host
//                 memory, answers in mapped host memory; the host writes and spins (no launch);
//   stream_query: cudaStreamQuery on the idle legacy stream (what ordering a doorbell call after
//                 the caller's earlier work would cost);
//   doorbell_call: the doorbell as the resident kernel's first form answered it (the PMPI
//                 library's HPCOLLS_PMPI_RESIDENT_US, far slower than the plain doorbell predicted:
//                 docs/PERFORMANCE.md#pmpi-resident): a system fence after the bell, the call's 8
//                 words read from mapped host memory, a fence, the status, a fence, the answer;
//   stream_bell:  the resident kernel's present form: the host rings a word in device memory with
//                 a stream memory operation on the legacy stream (cuStreamWriteValue32, ordered
//                 after that stream's work), the kernel polls it (an acquire load), reads the 8
//                 words from mapped host memory, answers with one store after a system fence.
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

// Answers each new sequence number in `bell` by writing it to `ack`; 0 in `bell` ends it. Given
// `words`, first as the resident kernel's first form answered a call (see the top): a fence, the
// call's 8 words from host memory (summed into `status`, so that the loads stay), a fence, the status.
__global__ void doorbell_kernel(volatile unsigned* bell, volatile unsigned* ack,
                                const volatile unsigned long long* words, volatile int* status) {
  unsigned seen = 0;
  for (;;) {
    unsigned s = *bell;
    if (s == seen) continue;
    if (s == 0u) return;
    seen = s;
    if (words != nullptr) {
      __threadfence_system();
      unsigned long long sum = 0;
      for (int w = 0; w < 8; ++w) sum += words[w];
      __threadfence_system();
      *status = int(sum & 1);
    }
    __threadfence_system();
    *ack = s;
  }
}

// The present form: the bell in device memory, rung by the stream; one answer store.
__global__ void stream_bell_kernel(const unsigned* bell, volatile unsigned long long* answer,
                                   const volatile unsigned long long* words) {
  unsigned seen = 0;
  for (;;) {
    unsigned s;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(s) : "l"(bell) : "memory");
    if (s == seen) continue;
    if (s == 0xffffffffu) return;
    seen = s;
    unsigned long long sum = 0;
    for (int w = 0; w < 8; ++w) sum += words[w];
    __threadfence_system();
    *answer = (sum & 1) << 32 | s;
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
  unsigned* words = nullptr;  // [0] flag, [1] bell, [2] ack
  check(cudaHostAlloc(&words, 3 * sizeof(unsigned), cudaHostAllocMapped), "cudaHostAlloc");
  std::memset(words, 0, 3 * sizeof(unsigned));
  unsigned* dwords = nullptr;
  check(cudaHostGetDevicePointer(&dwords, words, 0), "cudaHostGetDevicePointer");
  volatile unsigned* flag = words;
  volatile unsigned* bell = words + 1;
  volatile unsigned* ack = words + 2;

  const double launch_sync = per_call(batches, calls, [] {
    empty_kernel<<<1, 1>>>();
    cudaStreamSynchronize(nullptr);
  });
  unsigned next = 0;
  const double launch_flag = per_call(batches, calls, [&] {
    flag_kernel<<<1, 1>>>(dwords, ++next);
    spin_until(flag, next);
  });
  check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  const double stream_query = per_call(batches, calls, [] { (void)cudaStreamQuery(nullptr); });

  cudaStream_t service;
  check(cudaStreamCreateWithFlags(&service, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  *bell = 0;
  *ack = 0;
  unsigned seq = 0;
  doorbell_kernel<<<1, 32, 0, service>>>(dwords + 1, dwords + 2, nullptr, nullptr);
  check(cudaGetLastError(), "launch(doorbell_kernel)");
  const double doorbell = per_call(batches, calls, [&] {
    if (++seq == 0) seq = 1;
    *bell = seq;
    spin_until(ack, seq);
  });
  *bell = 0;
  check(cudaStreamSynchronize(service), "cudaStreamSynchronize(service)");
  // The first resident form: the same doorbell, answered as that kernel answered a call.
  unsigned long long* host_words = nullptr;  // [0..7] the call, [8] the answer of stream_bell
  check(cudaHostAlloc(&host_words, 9 * sizeof(unsigned long long), cudaHostAllocMapped), "cudaHostAlloc(words)");
  std::memset(host_words, 0, 9 * sizeof(unsigned long long));
  unsigned long long* dev_words = nullptr;
  check(cudaHostGetDevicePointer(&dev_words, host_words, 0), "cudaHostGetDevicePointer(words)");
  int* host_status = nullptr;
  check(cudaHostAlloc(&host_status, sizeof(int), cudaHostAllocMapped), "cudaHostAlloc(status)");
  int* dev_status = nullptr;
  check(cudaHostGetDevicePointer(&dev_status, host_status, 0), "cudaHostGetDevicePointer(status)");
  *ack = 0;
  seq = 0;
  doorbell_kernel<<<1, 32, 0, service>>>(dwords + 1, dwords + 2, dev_words, dev_status);
  check(cudaGetLastError(), "launch(doorbell_kernel, the first form's answer)");
  const double doorbell_call = per_call(batches, calls, [&] {
    if (++seq == 0) seq = 1;
    for (int w = 0; w < 8; ++w) host_words[w] = seq + w;
    *bell = seq;
    spin_until(ack, seq);
  });
  *bell = 0;
  check(cudaStreamSynchronize(service), "cudaStreamSynchronize(service)");
  // The present form: a device-memory bell rung by a stream memory operation.
  double stream_bell = -1;
  if (hpcolls::stream_write_available()) {
    unsigned* dev_bell = nullptr;
    check(cudaMalloc(&dev_bell, sizeof(unsigned)), "cudaMalloc(bell)");
    check(cudaMemset(dev_bell, 0, sizeof(unsigned)), "cudaMemset(bell)");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    volatile unsigned long long* answer = host_words + 8;
    stream_bell_kernel<<<1, 32, 0, service>>>(dev_bell, dev_words + 8, dev_words);
    check(cudaGetLastError(), "launch(stream_bell_kernel)");
    unsigned ring = 0;
    stream_bell = per_call(batches, calls, [&] {
      if (++ring == 0xffffffffu) ring = 1;
      for (int w = 0; w < 8; ++w) host_words[w] = ring + w;
      if (!hpcolls::stream_write_u32(cudaStreamLegacy, dev_bell, ring)) {
        std::fprintf(stderr, "cuStreamWriteValue32 refused\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      while (unsigned(*answer) != ring) {
      }
    });
    if (!hpcolls::stream_write_u32(cudaStreamLegacy, dev_bell, 0xffffffffu)) MPI_Abort(MPI_COMM_WORLD, 1);
    check(cudaStreamSynchronize(service), "cudaStreamSynchronize(service)");
    cudaFree(dev_bell);
  }
  cudaFreeHost(host_words);
  cudaFreeHost(host_status);
  if (rank == 0) {
    std::printf("ranks %d, devices %d, %d batches of %d calls, slowest rank per batch, median:\n", size, devices,
                batches, calls);
    std::printf("  launch_sync   %8.2f us  (empty kernel, cudaStreamSynchronize)\n", launch_sync * 1e6);
    std::printf("  launch_flag   %8.2f us  (kernel writes a mapped host flag, host spins)\n", launch_flag * 1e6);
    std::printf("  doorbell      %8.2f us  (a running kernel polls mapped host memory and answers)\n", doorbell * 1e6);
    std::printf("  stream_query  %8.2f us  (cudaStreamQuery of the idle legacy stream)\n", stream_query * 1e6);
    std::printf("  doorbell_call %8.2f us  (the doorbell answered as the resident kernel's first form did)\n",
                doorbell_call * 1e6);
    if (stream_bell >= 0)
      std::printf("  stream_bell   %8.2f us  (a device-memory bell rung by cuStreamWriteValue32, one answer store)\n",
                  stream_bell * 1e6);
    else
      std::printf("  stream_bell        n/a  (this driver has no stream memory operations)\n");
  }
  cudaStreamDestroy(service);
  cudaFreeHost(words);
  MPI_Finalize();
  return 0;
}
