// y = A x for a Hermitian (real: symmetric) m × m matrix A of which only the lower triangle
// (row >= column) of its row-major storage is read, the imaginary parts of its diagonal
// ignored as LAPACK's zhemv ignores them: half the memory traffic of a gemv over both
// triangles. It is the local product of the solver's tridiagonalization on one rank
// (sytrd_panel.cu), where that product is bound by HBM bandwidth and costs most of the stage.
//
// Deterministic: every sum runs over a fixed partition in a fixed order (no atomics), so repeated
// calls give bitwise-identical y.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "scalar_type.h"

namespace solvers {

// Elements of T of scratch that hemv_lower needs for every order up to m.
size_t hemv_lower_work_elems(int64_t m);

// Kernels one hemv_lower call launches (strip_products, combine): the sytrd loops count launches.
constexpr int kHemvLowerLaunches = 2;

// Queues y[0:m] = A x on `stream`; A[r][c] is a[r * ld + c], read for c <= r only. `work` holds
// hemv_lower_work_elems(m) elements. T is float, double, Complex<float> or Complex<double>.
template <typename T>
void hemv_lower(const T* a, int64_t ld, int64_t m, const T* x, T* y, T* work, cudaStream_t stream);

// The same for a type known at run time (the bindings).
void hemv_lower(ScalarType t, const void* a, int64_t ld, int64_t m, const void* x, void* y, void* work,
                cudaStream_t stream);

}  // namespace solvers
