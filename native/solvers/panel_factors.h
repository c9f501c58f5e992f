// The w × w part of sy2sb's panel QR by CholeskyQR2 (solvers/panel_qr.py): from Q₁ = A R₁⁻¹
// (R₁ = L₁ᴴ, L₁ the Cholesky factor of AᴴA), Q₁ᴴQ₁ and Q₁'s top block, the second pass and the
// Householder reconstruction (Ballard, Demmel, Grigori, Jacquelin, Knight, Nguyen,
// "Reconstructing Householder vectors from Tall-Skinny QR", JPDC 85, 2015) in one go:
//
//   R₂ = chol(Q₁ᴴQ₁)ᴴ,  Q = Q₁ R₂⁻¹,  E - Q D = V U  (E = [I; 0], LU without pivoting),
//   V₁ (unit lower), K = -R₂⁻¹ D U⁻¹ (so that V₂ = Q₁[w:] K, one GEMM the caller does),
//   T = U V₁⁻ᴴ, R_h = Dᴴ R₂ R₁, tau = diag(U).
//
// Each d_k is -conj(x)/|x|, chosen when column k is reached, x its diagonal entry after the
// elimination so far: the pivot is then 1 + |x| >= 1, no pivoting is needed and nothing is
// divided by a small number. One code for the host and the GPU; on the GPU one thread block, so
// nothing goes back to the host but the status.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "scalar_type.h"

namespace solvers {

// Row-major w × w inputs: gram = Q₁ᴴQ₁, q1_top = Q₁[:w], l1 = L₁ (lower triangle read).
// out: (4w + 1) × w, rows [V₁; K; T; R_h; tau]. scratch: panel_factors_scratch_elems(w) scalars.
// *status: 0 (kPanelFactorsDone) on entry, where it stays, or why the factors were not made
// (PanelFactorsStatus): the caller then takes geqrf. Nonzero on entry, nothing is done.
// w <= 64 goes to panel_factors_owned.cuh (scratch unused), wider to panel_factors_step.cuh.
struct PanelFactorsArgs {
  int w;
  const void* gram;
  const void* q1_top;
  const void* l1;
  void* out;
  void* scratch;
  int32_t* status;
};

enum PanelFactorsStatus : int32_t {
  kPanelFactorsDone = 0,
  kPanelFactorsNotOrthogonal = 1,   // max |Q₁ᴴQ₁ - I| above the limit (or not a number)
  kPanelFactorsNotDefinite = 2,     // the Cholesky factorization of Q₁ᴴQ₁ broke down
};

inline int64_t panel_factors_scratch_elems(int w) { return 2 * int64_t(w) * w + w; }

inline void check_panel_factors_args(const PanelFactorsArgs& args) {
  if (args.w < 1 || args.w > 1024)
    throw std::invalid_argument("solvers: panel_factors: panel width " + std::to_string(args.w) +
                                " is not in [1, 1024]");
}

void panel_factors_host(ScalarType t, const PanelFactorsArgs& args, double orthogonality_limit);
void panel_factors_device(ScalarType t, const PanelFactorsArgs& args, double orthogonality_limit, int device,
                          cudaStream_t stream);

}  // namespace solvers
