// sy2sb's panel QR by CholeskyQR2 (solvers/panel_qr.py) on the GPU in one call, for panels of
// width w <= 64: a few kernels queued on the caller's stream and nothing read back (the caller
// reads *status once, as it did after panel_factors.h alone):
//
//   gram = AᴴA                 (tall: per-block partial sums, then a fixed-order reduction)
//   L₁ = chol(gram), R₁⁻¹ = L₁⁻ᴴ   (one block: first_factor below)
//   Q₁ = A R₁⁻¹, gram = Q₁ᴴQ₁  (tall, one pass over A)
//   the w × w part             (one block: panel_factors.h)
//   V = [V₁; Q₁[w:] K]         (tall)
//
// R₁⁻¹ is formed row by row (X R₁ = I, each row a triangular solve), so A - Q₁R₁ is of order
// u ‖A‖ ‖|R₁⁻¹| |R₁|‖: a little more than cuBLAS trsm's u ‖A‖ on ill-conditioned panels, far
// below what CholeskyQR2's own test lets through (‖Q₁ᴴQ₁ - I‖_max <= limit). Every sum is in a
// fixed order (no floating-point atomics), so a panel's factors are the same bits every run.
// The tall products are FP64 (FP32) CUDA-core kernels: the module links no cuBLAS.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "panel_factors.h"
#include "scalar_type.h"

namespace solvers {

constexpr int kPanelCholqr2MaxWidth = 64;

// The first pass's w × w part: gram (row-major w × w, lower triangle read) -> l1 = L₁ (zero
// above the diagonal) and r1_inverse = L₁⁻ᴴ; *status kPanelFactorsDone, or
// kPanelFactorsNotDefinite where the Cholesky factorization broke down (l1, r1_inverse unwritten).
struct FirstFactorArgs {
  int w;
  const void* gram;
  void* l1;
  void* r1_inverse;
  int32_t* status;
};

// A (m × w, row stride lda, m >= w) -> v (m × w, row-major: V, unit lower trapezoidal) and out
// ((4w + 1) × w: panel_factors.h's [V₁; K; T; R_h; tau]); scratch: panel_cholqr2_scratch_elems.
struct PanelCholqr2Args {
  int64_t m;
  int w;
  const void* a;
  int64_t lda;
  void* v;
  void* out;
  void* scratch;
  int32_t* status;
};

// Blocks of the tall products that leave partial sums (at most; fewer for short panels).
constexpr int kPanelTallBlocks = 128;

inline int64_t panel_cholqr2_scratch_elems(int64_t m, int w) {
  return int64_t(kPanelTallBlocks) * 64 * 64 + 64 * 64 + 2 * int64_t(w) * w + m * w;
}

inline void check_first_factor_width(int w) {
  if (w < 1 || w > kPanelCholqr2MaxWidth)
    throw std::invalid_argument("solvers: panel CholeskyQR2: panel width " + std::to_string(w) + " is not in [1, " +
                                std::to_string(kPanelCholqr2MaxWidth) + "]");
}

void panel_first_factor_host(ScalarType t, const FirstFactorArgs& args);
void panel_cholqr2_host(ScalarType t, const PanelCholqr2Args& args, double orthogonality_limit);
void panel_first_factor_device(ScalarType t, const FirstFactorArgs& args, int device, cudaStream_t stream);
void panel_cholqr2_device(ScalarType t, const PanelCholqr2Args& args, double orthogonality_limit, int device,
                          cudaStream_t stream);

}  // namespace solvers
