// panel_cholqr2.h on the GPU: the tall products as one kernel over chunks of 64 rows, each
// chunk in shared memory and the owner grid's 4 × 4 entries a thread (owner_grid.cuh): 8 shared
// loads a 16 multiply-adds, FP64 (or FP32) CUDA cores; the Gram matrices' partial sums a block,
// added up in a fixed order by a second small kernel.
#include <algorithm>
#include <type_traits>

#include "cuda_check.h"
#include "ordered_sum.cuh"
#include "panel_factors_device.cuh"
#include "owner_grid.cuh"

namespace solvers {

namespace {

using namespace owner_grid;

// One pass over m rows of width w <= kN (the columns past w read as zero): each chunk of kN
// rows, times x where given, goes to `product` (rows < w from `top` where given) and adds its
// Gram matrix (of the product, or of the chunk itself) to the block's partial sums.
template <typename T>
struct Tall {
  const T* a;
  int64_t lda;
  int64_t m;
  int w;
  const T* x;         // w × w, or null
  T* product;         // m × w (row stride w), or null
  const T* top;       // w × w, or null
  T* partials;        // kN × kN a block, or null
};

template <typename T>
__global__ void __launch_bounds__(kThreads, 1) tall_kernel(Tall<T> p) {
  extern __shared__ __align__(16) unsigned char shared[];
  T* chunk = reinterpret_cast<T*>(shared);
  T* xs = chunk + kN * kLd;
  const BlockGrid ex;
  const Me me = BlockGrid::me();
  Tile<T> gram, y;
  entries<T>(me, gram, [](int, int, T& v) { v = T(0); });
  if (p.x != nullptr) stage<T>(ex, xs, Padded<T>{p.x, p.w, T(0), false});
  for (int64_t row0 = int64_t(blockIdx.x) * kN; row0 < p.m; row0 += int64_t(gridDim.x) * kN) {
    stage<T>(ex, chunk, [&](int i, int j) {
      const int64_t row = row0 + i;
      return row < p.m && j < p.w ? p.a[row * p.lda + j] : T(0);
    });
    __syncthreads();
    if (p.x != nullptr) {
      product(me, y, [&](int i, int c) { return chunk[i * kLd + c]; }, [&](int c, int j) { return xs[c * kLd + j]; });
      __syncthreads();  // the chunk read: its product takes its place
      entries<T>(me, y, [&](int i, int j, T& v) { chunk[i * kLd + j] = v; });
      __syncthreads();
    }
    if (p.product != nullptr) {
      entries<T>(me, y, [&](int i, int j, T&) {
        const int64_t row = row0 + i;
        if (row < p.m && j < p.w)
          p.product[row * p.w + j] = p.top != nullptr && row < p.w ? p.top[row * p.w + j] : chunk[i * kLd + j];
      });
    }
    if (p.partials != nullptr)
      add_product(me, gram, [&](int i, int c) { return conj(chunk[c * kLd + i]); },
                  [&](int c, int j) { return chunk[c * kLd + j]; });
    __syncthreads();
  }
  if (p.partials != nullptr)
    entries<T>(me, gram, [&](int i, int j, T& v) { p.partials[int64_t(blockIdx.x) * kN * kN + i * kN + j] = v; });
}

// out (w × w) = the sum of `count` blocks' partial sums, each entry's in block order: 8 groups
// of threads take every 8th block, then one thread adds the groups' sums in group order.
constexpr int kReduceCols = 32, kReduceGroups = 8;

template <typename T>
__global__ void __launch_bounds__(kReduceCols * kReduceGroups) reduce_kernel(const T* partials, int count, T* out,
                                                                            int w) {
  __shared__ T sums[kReduceGroups][kReduceCols];
  const int col = threadIdx.x % kReduceCols, group = threadIdx.x / kReduceCols;
  const int entry = blockIdx.x * kReduceCols + col;
  T sum = T(0);
  for (int b = group; b < count; b += kReduceGroups) sum += partials[int64_t(b) * kN * kN + entry];
  sums[group][col] = sum;
  __syncthreads();
  const int i = entry / kN, j = entry % kN;
  if (group == 0 && i < w && j < w) out[i * w + j] = sum_rows_in_order(sums, col);
}

template <typename T>
void tall(const Tall<T>& p, int blocks, int device, cudaStream_t stream) {
  const size_t bytes = 2 * size_t(kN) * kLd * sizeof(T);
  allow_shared(tall_kernel<T>, bytes, device, "panel tall_kernel");
  tall_kernel<T><<<blocks, kThreads, bytes, stream>>>(p);
  cuda_check(cudaGetLastError(), "panel tall_kernel launch");
}

template <typename T>
void reduce(const T* partials, int count, T* out, int w, cudaStream_t stream) {
  reduce_kernel<T><<<kN * kN / kReduceCols, kReduceCols * kReduceGroups, 0, stream>>>(partials, count, out, w);
  cuda_check(cudaGetLastError(), "panel reduce_kernel launch");
}

template <typename T>
void cholqr2(const PanelCholqr2Args& args, real_t<T> limit, int device, cudaStream_t stream) {
  const int w = args.w;
  const int64_t m = args.m, chunks = (m + kN - 1) / kN;
  const int blocks = int(std::min<int64_t>(chunks, kPanelTallBlocks));
  const T* a = static_cast<const T*>(args.a);
  T* partials = static_cast<T*>(args.scratch);
  T* gram = partials + int64_t(kPanelTallBlocks) * kN * kN;
  T* l1 = gram + kN * kN;
  T* r1_inverse = l1 + w * w;
  T* q1 = r1_inverse + w * w;
  T* out = static_cast<T*>(args.out);
  tall(Tall<T>{a, args.lda, m, w, nullptr, nullptr, nullptr, partials}, blocks, device, stream);
  reduce(partials, blocks, gram, w, stream);
  launch_first_factor<T>(FirstFactorArgs{w, gram, l1, r1_inverse, args.status}, device, stream);
  tall(Tall<T>{a, args.lda, m, w, r1_inverse, q1, nullptr, partials}, blocks, device, stream);
  reduce(partials, blocks, gram, w, stream);
  launch_owned_factors<T>(PanelFactorsArgs{w, gram, q1, l1, out, nullptr, args.status}, limit, device, stream);
  const T* k = out + w * w;     // V₂ = Q₁[w:] K, V₁ above it
  tall(Tall<T>{q1, w, m, w, k, static_cast<T*>(args.v), out, nullptr}, int(chunks), device, stream);
}

}  // namespace

void panel_cholqr2_device(ScalarType t, const PanelCholqr2Args& args, double orthogonality_limit, int device,
                          cudaStream_t stream) {
  check_first_factor_width(args.w);
  if (args.m < args.w || args.lda < args.w)
    throw std::invalid_argument("solvers: panel_cholqr2: a " + std::to_string(args.m) + " × " +
                                std::to_string(args.w) + " panel with row stride " + std::to_string(args.lda) +
                                " (it needs m >= w and a row stride >= w)");
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  with_scalar(t, "panel_cholqr2", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    cholqr2<T>(args, real_t<T>(orthogonality_limit), device, stream);
  });
}

}  // namespace solvers
