// Householder vectors of a matrix with orthonormal columns, from its top square block (Ballard,
// Demmel, Grigori, Jacquelin, Knight, Nguyen, "Reconstructing Householder vectors from Tall-Skinny
// QR", JPDC 85, 2015): for Q (m × b, QᴴQ = I) the unitary H = I - Y T Yᴴ with H[:, :b] = Q D,
// D diagonal unitary, follows from the LU factorization without pivoting
//     E - Q D = Y U,   E = [I; 0],   T = U Y₁⁻ᴴ,
// whose top b × b block is factored here (the rest of Y is -Q₂ D U⁻¹: one product, on the
// caller's device). Each d_k is chosen when column k is reached so that its pivot is
// 1 + |x| >= 1 (d_k = -conj(x)/|x|), x being the column's diagonal entry after the elimination so far: no pivoting is
// needed and nothing is divided by a small number.
#pragma once
#include <cstdint>

#include "scalar_type.h"

namespace solvers {

// In place on the b × b row-major block `a` (Q's top block, `ld` elements between rows) of
// `dtype`: on return its strict lower triangle holds Y₁'s (unit diagonal not stored), its upper
// triangle U; `d` (b entries of `dtype`) the diagonal of D.
void householder_reconstruction_host(ScalarType dtype, int64_t b, void* a, int64_t ld, void* d);

}  // namespace solvers
