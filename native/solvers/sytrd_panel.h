// The column loop of the solver's blocked Householder tridiagonalization (LAPACK latrd, zlatrd
// for complex) as one native call per panel, so that no column pays a Python round trip
// (docs/ARCHITECTURE.md, "Targets and floors": latency-critical loops). solvers/sytrd.py holds
// the algorithm and its Python twin for the CPU; this is the same computation, kernel for kernel, with the panel's one AllReduce per
// column issued natively through hpcolls' C entry (or through a caller-supplied fallback for
// NCCL/MPI transports).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>

#include "hpcolls_entry.h"
#include "scalar_type.h"

namespace solvers {

// Device buffers of one panel, all row-major. Global row g of the panel is panel row g - j0.
struct SytrdPanel {
  int64_t n;       // order of the matrix
  int64_t j0;      // first global column of the panel
  int64_t width;   // columns in the panel (<= kSytrdMaxWidth)
  void* local;     // this rank's block-cyclic piece of C (C22 as at panel start), row-major
  int64_t ld;      // its leading dimension (local columns)
  int64_t nloc_rows, nloc_cols;
  const int64_t* rows_host;  // global index of each local row / column (sorted), host copies
  const int64_t* cols_host;
  const int64_t* rows_dev;   // the same on the device
  const int64_t* cols_dev;
  void* panel;     // (n - j0) x width: block column at panel start, replicated
  void* v_mat;     // (n - j0) x width: the panel's reflectors so far (zero-initialized)
  void* w_mat;     // (n - j0) x width
  void* d;         // n: diagonal of T (real: the real type of a complex T, as in zhetrd)
  void* e;         // n - 1: off-diagonal of T (real)
  void* tau;       // n: reflector factors (T)
  void* work;      // sytrd_work_bytes(n, width, product) bytes of device scratch
  void* p;         // n: the column product that is all-reduced (separate so a fallback can use it)
  cudaStream_t stream;
  int product;     // a SytrdProduct: how the local product C22 v is computed
  double* phase_ms;  // host, kSytrdPhases entries: GPU time per phase is added here; null: not timed
  int fused_blocks;  // > 0: the fused loop on a grid of this many blocks (sytrd_fused.h); 0: the kernel loop
};

// The local product: a gemv over both stored triangles of the local block (any grid), or, when
// the local block is the whole trailing matrix (one rank), a hemv reading its lower triangle.
enum class SytrdProduct : int { Gemv = 0, HemvLower = 1 };

// Phases timed with phase_ms (CUDA events between them, so each includes its launch gaps).
enum SytrdPhase : int { kPhaseColumn, kPhaseReflector, kPhaseProduct, kPhaseAllreduce, kPhaseCorrection,
                        kPhaseW, kSytrdPhases };

constexpr int64_t kSytrdMaxWidth = 1024;

size_t sytrd_work_bytes(int64_t n, int64_t width, ScalarType t, SytrdProduct product);

// What the panel's AllReduces cost (host side): calls, bytes, seconds spent issuing them (none for
// the fused loop, whose kernel issues them itself),
// and what the loop enqueued on the stream: kernel launches, memsets and collective calls (a
// fallback counted as one), so that the loops' launches per column can be compared.
struct SytrdCollStats {
  int64_t calls = 0;
  int64_t bytes = 0;
  double seconds = 0;
  int64_t launches = 0;
};

// Runs the width column steps of one panel on `s.stream`, by one of two loops that compute the
// same bits:
//  - the kernel loop (s.fused_blocks == 0): each step its own launch, about eight per column.
//    `comm` (may be empty) carries the column AllReduce of p[0:count] in place when hpcolls'
//    native path takes the message; otherwise `fallback(count)` does (it must order itself on the
//    same stream). With one rank neither is called.
//  - the fused loop (s.fused_blocks > 0, from sytrd_fused_plan): the panel's columns in one
//    cooperative launch whose block 0 all-reduces each column through hpcolls' device API on
//    `comm` (sytrd_fused.h). Not yet run on a GPU.
SytrdCollStats sytrd_panel(const SytrdPanel& s, ScalarType t, const HpcollsComm& comm, int nranks,
                           const std::function<void(int64_t)>& fallback);

}  // namespace solvers
