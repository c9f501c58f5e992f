// Issue #47's measurement, from C on the GPU machine (tests/gpu_steps/pmpi_bench.steps): for each
// collective the PMPI library takes and each size from 8 B to 64 KiB, the host-visible latency
// per call on device buffers through the library, beside what a C code does there without it
// (cudaMemcpy to the host, MPI on host buffers, cudaMemcpy back), in the same run; and the enqueue
// API's device time per call from CUDA-graph replay. Medians of repeated timed batches, the slowest
// rank's time per batch. One line per (collective, bytes), and JSON with --json FILE; first, the
// floor: an empty kernel launched and waited for, per call.
//
//   nvcc -ccbin mpicxx -std=c++17 -O2 -Inative/include -o pmpi_latency native/bench/pmpi_latency.cu \
//        -L<dir of the library> -lhpcolls_pmpi_staging -Xlinker -rpath -Xlinker <dir>
//   mpiexec -n 2 ./pmpi_latency [--json FILE] [--calls N] [--batches B]
#include <cuda_runtime.h>
#include <mpi.h>

#include "mpi_timing.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hpcolls/pmpi.h"

namespace {

int rank_ = 0, size_ = 1;

using hpcolls::bench::median;
using hpcolls::bench::per_call;

// The floor a blocking call through a kernel cannot beat: an empty kernel launched on the legacy
// default stream (the library's default) and waited for by the host.
__global__ void empty_kernel() {}

enum Coll { Allreduce, Bcast, Reduce, Allgather, ReduceScatterBlock, ReduceScatter, kColls };
const char* kNames[] = {"allreduce", "bcast", "reduce", "allgather", "reduce_scatter_block", "reduce_scatter"};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  const char* json = nullptr;
  int calls = 200, batches = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--json")) json = argv[i + 1];
    if (!std::strcmp(argv[i], "--calls")) calls = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--batches")) batches = std::atoi(argv[i + 1]);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (rank_ == 0) std::printf("SKIP: no CUDA device here\n");
    MPI_Finalize();
    return 0;
  }
  cudaSetDevice(rank_ % devices);
  const size_t max_bytes = 64 << 10;
  const size_t n = size_t(size_);
  void *ds, *dr;
  cudaMalloc(&ds, max_bytes * n);
  cudaMalloc(&dr, max_bytes * n);
  cudaMemset(ds, 0, max_bytes * n);
  std::vector<char> hs(max_bytes * n), hr(max_bytes * n);
  cudaHostRegister(hs.data(), hs.size(), 0);  // what a careful C code does: pinned host copies
  cudaHostRegister(hr.data(), hr.size(), 0);
  std::vector<int> counts(n);
  std::string out = "[";
  const double floor_sync = per_call(batches, calls, [] {
    empty_kernel<<<1, 1>>>();
    cudaStreamSynchronize(nullptr);
  });
  if (rank_ == 0) {
    std::printf("floor: an empty kernel launched and waited for (cudaStreamSynchronize): %.2f us per call\n",
                floor_sync * 1e6);
    char row[160];
    std::snprintf(row, sizeof row, "{\"collective\": \"empty_kernel_launch_and_wait\", \"bytes\": 0, \"ranks\": %d, "
                  "\"library_us\": %.3f}", size_, floor_sync * 1e6);
    out += row;
  }
  if (rank_ == 0) std::printf("%-22s %8s %14s %14s %8s %16s\n", "collective", "bytes", "library_us", "copies_mpi_us", "speedup", "enqueue_graph_us");
  for (int c = 0; c < kColls; ++c)
    for (size_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
      const int count = int(bytes / sizeof(float));
      std::fill(counts.begin(), counts.end(), count);
      const size_t in_bytes = (c == ReduceScatterBlock || c == ReduceScatter) ? bytes * n : bytes;
      const size_t out_bytes = (c == Allgather) ? bytes * n : bytes;
      auto mpi = [&](const void* s, void* r) {
        switch (Coll(c)) {
          case Allreduce: MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
          case Bcast: MPI_Bcast(r, count, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
          case Reduce: MPI_Reduce(s, r, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
          case Allgather: MPI_Allgather(s, count, MPI_FLOAT, r, count, MPI_FLOAT, MPI_COMM_WORLD); break;
          case ReduceScatterBlock: MPI_Reduce_scatter_block(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
          default: MPI_Reduce_scatter(s, r, counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
      };
      const double library = per_call(batches, calls, [&] { mpi(ds, dr); });
      const double copies = per_call(batches, calls, [&] {
        cudaMemcpy(hs.data(), ds, in_bytes, cudaMemcpyDeviceToHost);
        mpi(hs.data(), hr.data());
        cudaMemcpy(dr, hr.data(), out_bytes, cudaMemcpyHostToDevice);
      });
      // The enqueue API's device time: `calls` enqueued calls captured into one graph, replayed.
      double graph_us = -1;
      cudaStream_t s;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      auto enqueue = [&] {
        switch (Coll(c)) {
          case Allreduce: return hpcolls_allreduce_enqueue(ds, dr, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, s);
          case Bcast: return hpcolls_bcast_enqueue(dr, count, MPI_FLOAT, 0, MPI_COMM_WORLD, s);
          case Reduce: return hpcolls_reduce_enqueue(ds, dr, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD, s);
          case Allgather: return hpcolls_allgather_enqueue(ds, count, MPI_FLOAT, dr, count, MPI_FLOAT, MPI_COMM_WORLD, s);
          case ReduceScatterBlock: return hpcolls_reduce_scatter_block_enqueue(ds, dr, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, s);
          default: return hpcolls_reduce_scatter_enqueue(ds, dr, counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, s);
        }
      };
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
      int ok = enqueue() == MPI_SUCCESS, all_ok = 0;
      cudaStreamSynchronize(s);
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (all_ok) {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        for (int i = 0; i < calls; ++i) enqueue();
        cudaStreamEndCapture(s, &graph);
        cudaGraphInstantiate(&exec, graph, 0);
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        std::vector<double> t;
        cudaGraphLaunch(exec, s);  // warm
        cudaStreamSynchronize(s);
        for (int b = 0; b < batches; ++b) {
          MPI_Barrier(MPI_COMM_WORLD);
          cudaEventRecord(e0, s);
          cudaGraphLaunch(exec, s);
          cudaEventRecord(e1, s);
          cudaEventSynchronize(e1);
          float ms = 0;
          cudaEventElapsedTime(&ms, e0, e1);
          double us = ms * 1e3 / calls, slowest = 0;
          MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          t.push_back(slowest);
        }
        graph_us = median(t);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
      }
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
      cudaStreamDestroy(s);
      if (rank_ == 0) {
        std::printf("%-22s %8zu %14.2f %14.2f %8.1f %16.2f\n", kNames[c], bytes, library * 1e6, copies * 1e6,
                    copies / library, graph_us);
        char row[256];
        std::snprintf(row, sizeof row,
                      "%s{\"collective\": \"%s\", \"bytes\": %zu, \"ranks\": %d, \"library_us\": %.3f, "
                      "\"copies_mpi_us\": %.3f, \"enqueue_graph_us\": %.3f}",
                      out.size() > 1 ? ", " : "", kNames[c], bytes, size_, library * 1e6, copies * 1e6, graph_us);
        out += row;
      }
    }
  if (rank_ == 0 && json != nullptr) {
    if (FILE* f = std::fopen(json, "w")) {
      std::fprintf(f, "%s]\n", out.c_str());
      std::fclose(f);
    }
  }
  MPI_Finalize();
  return 0;
}
