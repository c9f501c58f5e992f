// hpcolls' device API, the complete example of docs/DEVICE_API.md: one kernel computes, reduces
// across ranks and continues, in one launch. Each rank holds a slice of a distributed vector x;
// the kernel
//   1. computes this rank's sum of squares (a block reduction),
//   2. allreduces it across ranks (hpcolls::device::allreduce: every rank gets the same bits),
//   3. allgathers every rank's share of it (hpcolls::device::allgather),
//   4. broadcasts rank 0's sign choice (hpcolls::device::broadcast: the global x[0] made positive),
//   5. continues: scales its slice to unit global norm with that sign.
// Around the kernel the program calls MPI_Allreduce on device buffers, which the PMPI library runs
// on the same communicator through the host path: host-path and device-path calls interleave in
// one order on every rank. The program then checks every result against MPI on host copies.
//
// Build and run (tests/pmpi/build_device_programs.sh builds it; tests/gpu/test_hpcolls_device_api_gpu.py
// runs it at several ranks):
//   nvcc -ccbin mpicxx -std=c++17 -O2 -I<hpcolls>/native/include -o device_api_normalize \
//        docs/examples/device_api_normalize.cu -L<dir of the library> -lhpcolls_pmpi_staging
//   mpiexec -n 4 ./device_api_normalize        (several ranks on one GPU: under MPS)
// <dir of the library>: dirname of `python -m hpcolls preload`. Prints "SKIP: ..." without a GPU.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "hpcolls/device/collectives.cuh"
#include "hpcolls/pmpi.h"

namespace dev = hpcolls::device;

constexpr int kThreads = 256;  // a power of two: the block reduction below halves it

// One block per rank. report: [0] this rank's sum of squares, [1] the global one, [2] the sign,
// [3 + q] rank q's share (from the allgather). status: the first operation that did not return Ok.
__global__ void normalize(hpcolls_device_comm_t comm, double* x, int n, double* report, int* status) {
  __shared__ double partial[kThreads];
  __shared__ double total, sign, shares[HPCOLLS_DEVICE_MAX_RANKS];
  const int t = threadIdx.x;

  // 1. Compute: this rank's sum of squares, in a fixed order.
  double s = 0;
  for (int i = t; i < n; i += kThreads) s += x[i] * x[i];
  partial[t] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (t < w) partial[t] += partial[t + w];
    __syncthreads();
  }

  // 2-4. Exchange, inside the kernel: every thread of the block calls each operation. The
  // operations read and write shared memory here; global memory works alike.
  dev::Status st = dev::allreduce<hpcolls::Op::Sum>(comm, &partial[0], &total, 1);
  if (st == dev::Status::Ok) st = dev::allgather(comm, &partial[0], shares, 1);
  if (t == 0 && comm.rank == 0) sign = x[0] < 0 ? -1.0 : 1.0;  // only rank 0 holds the global x[0]
  if (st == dev::Status::Ok) st = dev::broadcast(comm, &sign, 1, /*root=*/0);
  if (st != dev::Status::Ok) {  // a time-out: the host's next call on the communicator raises
    if (t == 0) *status = int(st);
    return;
  }

  // 5. Continue with the global result.
  const double scale = sign / sqrt(total);
  for (int i = t; i < n; i += kThreads) x[i] *= scale;
  if (t == 0) {
    report[0] = partial[0];
    report[1] = total;
    report[2] = sign;
    for (int q = 0; q < comm.nranks; ++q) report[3 + q] = shares[q];
    *status = 0;
  }
}

#define CUDA(call)                                                                        \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));             \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                       \
    }                                                                                     \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (rank == 0) std::printf("SKIP: no CUDA device here (the device API runs on a GPU)\n");
    MPI_Finalize();
    return 0;
  }
  CUDA(cudaSetDevice(rank % devices));

  // This rank's slice: sizes and values differ per rank; rank 0's x[0] is negative.
  const int n = 4096 + 17 * rank;
  std::vector<double> x0(n);
  for (int i = 0; i < n; ++i) x0[i] = std::sin(0.001 * (i + 1) * (rank + 1)) - (rank == 0 && i == 0 ? 2.0 : 0.0);
  double *x, *report;
  int *status, *count;
  CUDA(cudaMalloc(&x, n * sizeof(double)));
  CUDA(cudaMalloc(&report, (3 + size) * sizeof(double)));
  CUDA(cudaMalloc(&status, sizeof(int)));
  CUDA(cudaMalloc(&count, sizeof(int)));
  CUDA(cudaMemcpy(x, x0.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  CUDA(cudaMemset(status, 0xff, sizeof(int)));

  // The communicator's device struct (collective at its first device use, as a collective is).
  hpcolls_device_comm_t comm;
  if (hpcolls_device_comm(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 3);

  // A host-path collective on device memory, the kernel, another host-path collective: one order
  // on every rank, all on the default stream (the PMPI library's blocking calls use it too).
  const int one = 1;
  CUDA(cudaMemcpy(count, &one, sizeof(int), cudaMemcpyHostToDevice));
  MPI_Allreduce(MPI_IN_PLACE, count, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  normalize<<<1, kThreads>>>(comm, x, n, report, status);
  CUDA(cudaGetLastError());
  MPI_Allreduce(MPI_IN_PLACE, count, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  // Checks against MPI on host copies.
  int bad = 0, st = -1, counted = 0;
  std::vector<double> got(3 + size), x1(n);
  CUDA(cudaMemcpy(&st, status, sizeof(int), cudaMemcpyDeviceToHost));
  CUDA(cudaMemcpy(got.data(), report, got.size() * sizeof(double), cudaMemcpyDeviceToHost));
  CUDA(cudaMemcpy(x1.data(), x, n * sizeof(double), cudaMemcpyDeviceToHost));
  CUDA(cudaMemcpy(&counted, count, sizeof(int), cudaMemcpyDeviceToHost));
  if (st != 0) {
    std::fprintf(stderr, "rank %d: a device operation returned status %d\n", rank, st);
    ++bad;
  }
  std::vector<double> shares(size);
  MPI_Allgather(&got[0], 1, MPI_DOUBLE, shares.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
  double total = shares[0];  // the device allreduce's order: rank 0, then 1, 2, ...
  for (int q = 1; q < size; ++q) total += shares[q];
  double sign = x0[0] < 0 ? -1.0 : 1.0;
  MPI_Bcast(&sign, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (std::memcmp(&got[1], &total, sizeof total) != 0) ++bad, std::fprintf(stderr, "rank %d: global sum differs\n", rank);
  if (std::memcmp(&got[3], shares.data(), size * sizeof(double)) != 0) ++bad, std::fprintf(stderr, "rank %d: shares differ\n", rank);
  if (got[2] != sign) ++bad, std::fprintf(stderr, "rank %d: sign %g, rank 0's is %g\n", rank, got[2], sign);
  const double scale = sign / std::sqrt(total);
  for (int i = 0; i < n; ++i)
    if (x1[i] != x0[i] * scale) {
      ++bad, std::fprintf(stderr, "rank %d: x[%d] = %.17g, not %.17g\n", rank, i, x1[i], x0[i] * scale);
      break;
    }
  if (counted != size * size) ++bad, std::fprintf(stderr, "rank %d: host-path count %d, not %d\n", rank, counted, size * size);

  int all_bad = 0;
  MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("%s: device API example at %d ranks (global sum of squares %.17g)\n", all_bad ? "FAIL" : "ok", size,
                got[1]);
  CUDA(cudaFree(x));
  CUDA(cudaFree(report));
  CUDA(cudaFree(status));
  CUDA(cudaFree(count));
  MPI_Finalize();
  return all_bad ? 1 : 0;
}
