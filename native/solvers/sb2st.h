// The bulge chasing of sb2st / hb2st (solvers/sb2st.py: the algorithm and its Python reference)
// on the host and on the GPU, one step function for both (sb2st_step.cuh). Sweeps are pipelined:
// a worker (a host thread, or a GPU thread block) takes the next sweep from a shared counter and
// starts step k of sweep s once sweep s-1 has published that its steps 0 .. k are done (its
// progress counter), and reads the step's late entries once it has published step k+1 too: of
// the band a step reads (rows r0 .. r0+b-1, r0 = s+1+kb), step k+1 of sweep s-1 writes row
// r0+b-1 alone, and only A's last row and the left block's last entry in it. A worker only ever
// waits for a lower sweep, taken earlier by a worker that is running, so the pipeline cannot
// deadlock, whatever number of workers are resident.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "scalar_type.h"

namespace solvers {

struct Sb2stArgs {
  int64_t n;              // order
  int b;                  // bandwidth (the work array holds 2b subdiagonals)
  void* band;             // n x 2b, row-major: band[c * 2b + d] = B[c + d, c]
  void* v;                // reflectors (groups x height x group), or null (eigenvalues only)
  void* tau;              // groups x group
  const int64_t* index;   // BulgeLayout.index, nσ x kmax (host memory for the host chase,
                          // device memory for the GPU's)
  int64_t kmax;
  int group;
  int height;             // b + group - 1
};

// The chase on the host with `threads` worker threads (results do not depend on the count).
// block_threads > 1 (tests): the sweeps one after the other, each step run by that many host
// threads the way a GPU thread block runs it (strided loops, barriers, sums in member order).
void sb2st_host(const Sb2stArgs& args, ScalarType t, int threads, int block_threads = 1);

// Bytes of shared memory a GPU worker needs for bandwidth b, and whether this GPU gives them.
size_t sb2st_shared_bytes(int b, ScalarType t);
bool sb2st_device_fits(int b, ScalarType t, int device);

// Bytes of device scratch (progress counters, the sweep counter, the error record) for order n.
size_t sb2st_device_work_bytes(int64_t n);

// The chase on the GPU: one kernel on `stream`, then waits for it; throws CudaError, or a
// runtime_error when a worker waited longer than timeout_s for the sweep before its own.
// `workers`: thread blocks (0: as many as fit on the GPU at once).
void sb2st_device(const Sb2stArgs& args, ScalarType t, int device, void* work, cudaStream_t stream,
                  int threads_per_block, int workers, double timeout_s);

}  // namespace solvers
