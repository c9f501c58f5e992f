// The fused column loop of the distributed one-stage tridiagonalization: a panel's columns in one
// cooperative launch, each column's AllReduce made inside the kernel through hpcolls' device API
// (hpcolls/device/collectives.cuh) instead of a host call between kernels. Not yet run on a GPU.
// Design and why: sytrd_fused.cu's head and docs/SOLVER.md ("The fused column loop").
#pragma once
#include <cstdint>
#include <string>

#include "hpcolls_entry.h"
#include "scalar_type.h"
#include "sytrd_panel.h"

namespace solvers {

// The fused loop for one reduction, decided once at its start: its grid, or why it does not apply.
struct SytrdFusedPlan {
  int blocks = 0;       // > 0: SytrdPanel::fused_blocks
  std::string refused;  // non-empty: why the kernel loop runs instead
};

// Whether the fused loop can run panels of at most `width` columns of an order-n matrix of type t
// on `comm` (hpcolls' native path; empty: refused), with `ranks_on_gpu` ranks sharing this GPU:
// the C entry has the device API, the largest column AllReduce ((n - 1) elements) fits it, the GPU
// takes cooperative launches and the kernel fits an SM. Every rank must agree on the outcome (the
// caller's business: the loops issue different collectives). The grid is a share of the GPU that
// every sharing rank's grid can hold at once (sytrd_fused.cu: kShareDivisor).
SytrdFusedPlan sytrd_fused_plan(const HpcollsComm& comm, int64_t n, int64_t width, ScalarType t, int ranks_on_gpu);

// One panel by the fused loop (sytrd_panel dispatches here when s.fused_blocks > 0).
SytrdCollStats sytrd_fused_panel(const SytrdPanel& s, ScalarType t, const HpcollsComm& comm);

}  // namespace solvers
