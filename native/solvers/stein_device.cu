// Selected tridiagonal eigenpairs on the GPU (stein.h): a warp per eigenvalue, its lanes the
// kLanes points of a multisection pass; a thread per eigenvector. Both are chains of n dependent
// steps per pass (a division each), so few threads suffice and the time is the chain's latency.
#include "cuda_check.h"
#include "stein.h"
#include "stein_step.cuh"

namespace solvers {
namespace {

static_assert(stein::kLanes == 32, "a multisection pass is one warp's lanes");

__global__ void eigenvalues_kernel(Tridiagonal t, BisectionBounds bounds, int64_t first, int64_t count, double* w) {
  const int64_t j = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = int(threadIdx.x % 32);
  if (j >= count) return;  // whole warps leave together: j is the same on every lane
  const int64_t index = first + j;
  double lo = bounds.lower, hi = bounds.upper;
  for (int pass = 0; pass < stein::kMaxPasses && !stein::converged(lo, hi, bounds.abstol, bounds.pivmin); ++pass) {
    const double x = stein::pass_point(lo, hi, lane);
    const unsigned above = __ballot_sync(0xffffffffu, stein::sturm_count(t.d, t.e2, t.n, x, bounds.pivmin) >= index);
    const int found = above ? __ffs(above) - 1 : stein::kLanes;
    // Every lane takes the same points from the lanes that computed them: lo and hi stay uniform.
    const double at = __shfl_sync(0xffffffffu, x, found == stein::kLanes ? 0 : found);
    const double before = __shfl_sync(0xffffffffu, x, found == 0 ? 0 : found - 1);
    if (!stein::narrow(found, at, before, lo, hi)) break;
  }
  if (lane == 0) w[j] = (lo + hi) / 2;
}

__global__ void vectors_kernel(Tridiagonal t, const double* w, double onenrm, int64_t first_vector,
                               InverseIterationWork work, int32_t* iterations) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= work.count) return;
  const stein::VectorView v{work.a + j, work.r + j, work.b + j, work.u2 + j,
                            work.l + j, work.swap + j, work.y + j, work.count};
  iterations[j] = stein::inverse_iteration(t.d, t.e, t.n, w[j], uint64_t(first_vector + j), onenrm, v);
}

constexpr int kThreads = 128;

}  // namespace

void stein_eigenvalues_device(const Tridiagonal& t, const BisectionBounds& bounds, int64_t first, int64_t count,
                              double* w, cudaStream_t stream) {
  if (count <= 0) return;
  const int64_t blocks = (count * 32 + kThreads - 1) / kThreads;
  eigenvalues_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(t, bounds, first, count, w);
  cuda_check(cudaGetLastError(), "launch(stein eigenvalues)");
}

void stein_vectors_device(const Tridiagonal& t, const double* w, double onenrm, int64_t first_vector,
                          const InverseIterationWork& work, int32_t* iterations, cudaStream_t stream) {
  if (work.count <= 0) return;
  // Small blocks: the vectors are few (a thread each), spread over as many SMs as they fill.
  constexpr int threads = 32;
  const int64_t blocks = (work.count + threads - 1) / threads;
  vectors_kernel<<<unsigned(blocks), threads, 0, stream>>>(t, w, onenrm, first_vector, work, iterations);
  cuda_check(cudaGetLastError(), "launch(stein vectors)");
}

}  // namespace solvers
