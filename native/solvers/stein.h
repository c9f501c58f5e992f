// Selected eigenpairs of a real symmetric tridiagonal T on the host and on the GPU, one step code
// for both (stein_step.cuh): eigenvalues il..iu by multisection, eigenvectors of given
// eigenvalues by inverse iteration (solvers/stein.py orthonormalizes and checks them).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace solvers {

struct Tridiagonal {
  const double* d;   // n diagonal entries
  const double* e;   // n - 1 off-diagonal entries
  const double* e2;  // e squared (eigenvalues only)
  int64_t n;
};

// What bisection needs besides T, as dstebz computes it (solvers/stein.py).
struct BisectionBounds {
  double lower, upper;  // Gershgorin bounds, widened: no eigenvalue outside
  double pivmin;        // smallest pivot magnitude of a Sturm count
  double abstol;        // an eigenvalue's interval is narrowed to this width (or two ulps)
};

// Storage of a batch of `count` vectors, element-major (stein_step.cuh): each array n x count.
struct InverseIterationWork {
  double *a, *r, *b, *u2, *l, *y;
  uint8_t* swap;
  int64_t count;
};

// Eigenvalues first..first+count-1 (1-based) of T into w[0..count); on the GPU one warp each.
void stein_eigenvalues_host(const Tridiagonal& t, const BisectionBounds& bounds, int64_t first, int64_t count,
                            double* w, int threads);
void stein_eigenvalues_device(const Tridiagonal& t, const BisectionBounds& bounds, int64_t first, int64_t count,
                              double* w, cudaStream_t stream);

// Eigenvectors of w[0..work.count) into work.y (unit, largest entry positive); `first_vector`
// numbers the first of them for the start vectors (the same vector whatever the batch);
// iterations[j]: the iterations vector j took, or -1 if dstein's stopping rule never held.
// `onenrm`: ‖T‖₁. On the GPU one thread each.
void stein_vectors_host(const Tridiagonal& t, const double* w, double onenrm, int64_t first_vector,
                        const InverseIterationWork& work, int32_t* iterations, int threads);
void stein_vectors_device(const Tridiagonal& t, const double* w, double onenrm, int64_t first_vector,
                          const InverseIterationWork& work, int32_t* iterations, cudaStream_t stream);

}  // namespace solvers
