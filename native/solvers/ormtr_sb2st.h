// Q2's back-transformation (solvers/ormtr_sb2st.py) on the GPU: Y ← (I - V T Vᴴ) Y for every
// block reflector of a run of slots, one fused kernel per slot.
//
// A slot is a batch of groups on disjoint rows (each group h = b + g - 1 rows, g + b rows after
// the one before). Two batched GEMMs per slot (W = Vᴴ Y, then Y -= (V T) W) stream the slot's rows
// of Y through memory three times and W twice; here one thread block takes a group's 2g × C tile
// of Y into shared memory, forms W there and writes the tile back once: half the traffic. Its
// products run on FP64 tensor cores (mma m8n8k4) and skip V's zero triangles: column j of a
// group's V is zero outside rows j … j+b-1 and column j of V T outside rows 0 … j+b-1.
//
// Only b = g = kOrmtrSb2stGroup (the GPU's bandwidth) and float64 / complex128; ormtr_sb2st.py
// takes the GEMMs for everything else.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "scalar_type.h"

namespace solvers {

constexpr int kOrmtrSb2stGroup = 64;

struct OrmtrSb2stArgs {
  void* y;                   // (rows, ld) row-major; every group's rows lie inside it
  int64_t ld;                // elements between rows of y
  int64_t ncols;             // columns of y to transform (<= ld)
  const void* v;             // (groups, h, g) of the reflectors, row-major, group `v_base` first
  const void* vt;            // (groups, h, g) of V T, group `vt_base` first
  int64_t v_base, vt_base;   // storage index of v's and vt's first group
  const int64_t* slot_start; // host: storage index of each slot's first group (slots + 1)
  const int64_t* slot_row;   // host: first row of each slot's first group
  int64_t first_slot, end_slot;
  int band, group;
};

// Whether the kernel takes this case (else the caller's GEMMs).
bool ormtr_sb2st_device_supports(ScalarType t, int band, int group);

// Enqueues the slots [first_slot, end_slot) in order on `stream` (no host synchronization).
void ormtr_sb2st_device(ScalarType t, const OrmtrSb2stArgs& args, int device, cudaStream_t stream);

}  // namespace solvers
