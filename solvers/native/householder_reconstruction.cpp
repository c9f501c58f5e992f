// The top block's LU of householder_reconstruction.h: b is a panel width (64), so O(b³) scalar
// work on the host is a few microseconds, less than the launches a device version would take.
#include "householder_reconstruction.h"

#include <complex>
#include <stdexcept>
#include <string>

namespace solvers {
namespace {

template <typename T>
T conjugate(const T& x) { return x; }
template <typename T>
std::complex<T> conjugate(const std::complex<T>& x) { return std::conj(x); }

// -conj(x)/|x| (the d that makes 1 - d x = 1 + |x|), and -1 for x = 0.
template <typename T>
T opposite_sign(const T& x) {
  const auto magnitude = std::abs(x);
  return magnitude == 0 ? T(-1) : T(-conjugate(x) / magnitude);
}

// Right-looking elimination of E - Q D with D unknown ahead of the current column: the columns
// of E are unit vectors and stay so under the elimination (L⁻¹ is lower triangular), so the
// array holds only Q's part; each later column's d_j is a common factor of its Q part and is
// applied when that column is reached.
template <typename T>
void reconstruct(int64_t b, T* a, int64_t ld, T* d) {
  for (int64_t k = 0; k < b; ++k) {
    T* row_k = a + k * ld;
    const T x = row_k[k];
    const T dk = opposite_sign(x);
    const T pivot = T(1 + std::abs(x));              // 1 - d_k x, real as it is exactly
    d[k] = dk;
    for (int64_t i = 0; i < k; ++i) a[i * ld + k] = -dk * a[i * ld + k];   // U[i, k]
    row_k[k] = pivot;
    for (int64_t i = k + 1; i < b; ++i) {
      T* row_i = a + i * ld;
      const T l = -dk * row_i[k] / pivot;             // Y₁[i, k]
      row_i[k] = l;
      for (int64_t j = k + 1; j < b; ++j) row_i[j] -= l * row_k[j];
    }
  }
}

}  // namespace

void householder_reconstruction_host(ScalarType dtype, int64_t b, void* a, int64_t ld, void* d) {
  if (b < 0 || ld < b)
    throw std::invalid_argument("solvers: householder_reconstruction: block of order " + std::to_string(b) +
                                " with rows " + std::to_string(ld) + " elements apart");
  switch (dtype) {
    case ScalarType::F32: return reconstruct(b, static_cast<float*>(a), ld, static_cast<float*>(d));
    case ScalarType::F64: return reconstruct(b, static_cast<double*>(a), ld, static_cast<double*>(d));
    case ScalarType::C64:
      return reconstruct(b, static_cast<std::complex<float>*>(a), ld, static_cast<std::complex<float>*>(d));
    case ScalarType::C128:
      return reconstruct(b, static_cast<std::complex<double>*>(a), ld, static_cast<std::complex<double>*>(d));
  }
  throw std::invalid_argument("solvers: householder_reconstruction: unknown dtype code " +
                              std::to_string(static_cast<int>(dtype)));
}

}  // namespace solvers
