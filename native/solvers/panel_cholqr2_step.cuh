// panel_cholqr2.h's steps, written once for the host and the GPU: the sequence of passes
// (steps(), over a Runner that runs each pass where it is: panel_cholqr2_host.cu,
// panel_cholqr2_device.cu) and the tall pass of one block over the owner grid (owner_grid.cuh):
// chunks of 64 rows in shared memory, kTile × kTile entries a thread, 2 kTile shared loads a
// kTile² multiply-adds; each block's Gram matrix partial sums, added up in a fixed order.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "owner_grid.cuh"
#include "panel_cholqr2.h"

namespace solvers {
namespace panel_cholqr2 {

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

// The shared memory of a tall pass: the chunk and x, kN × kLd each.
constexpr int64_t kTallSharedElems = 2 * int64_t(kN) * kLd;

// Block `block` of `blocks` takes chunks block, block + blocks, ...
#pragma nv_exec_check_disable
template <typename T, typename Ex>
__host__ __device__ void tall_block(const Ex& ex, const Tall<T>& p, int block, int blocks, T* shared) {
  T *chunk = shared, *xs = shared + kN * kLd;
  typename Ex::template Owned<T> gram, y;
  fill<T>(ex, gram, [](int, int) { return T(0); });
  if (p.x != nullptr) stage<T>(ex, xs, Padded<T>{p.x, p.w, T(0), false});
  for (int64_t row0 = int64_t(block) * kN; row0 < p.m; row0 += int64_t(blocks) * kN) {
    stage<T>(ex, chunk, [&](int i, int j) {
      const int64_t row = row0 + i;
      return row < p.m && j < p.w ? p.a[row * p.lda + j] : T(0);
    });
    ex.sync();
    if (p.x != nullptr) {
      ex.each([&](Me me) {
        product(me, y.of(me), [&](int i, int c) { return chunk[i * kLd + c]; },
                [&](int c, int j) { return xs[c * kLd + j]; });
      });
      ex.sync();  // the chunk read: its product takes its place
      put<T>(ex, y, chunk, kLd, kN);
      ex.sync();
    }
    if (p.product != nullptr) {
      positions(ex, [&](int i, int j) {
        const int64_t row = row0 + i;
        if (row < p.m && j < p.w)
          p.product[row * p.w + j] = p.top != nullptr && row < p.w ? p.top[row * p.w + j] : chunk[i * kLd + j];
      });
    }
    if (p.partials != nullptr) {
      ex.each([&](Me me) {
        add_product(me, gram.of(me), [&](int i, int c) { return conj(chunk[c * kLd + i]); },
                    [&](int c, int j) { return chunk[c * kLd + j]; });
      });
    }
    ex.sync();
  }
  if (p.partials != nullptr) put<T>(ex, gram, p.partials + int64_t(block) * kN * kN, kN, kN);
}

// The partial sums of blocks group, group + kReduceGroups, ... of one entry, in block order;
// the groups' sums are then added in group order (the GPU: a thread each).
constexpr int kReduceGroups = 8;

template <typename T>
__host__ __device__ T group_sum(const T* partials, int count, int entry, int group) {
  T sum = T(0);
  for (int b = group; b < count; b += kReduceGroups) sum += partials[int64_t(b) * kN * kN + entry];
  return sum;
}

// Where a call's scratch (panel_cholqr2_scratch_elems) keeps what passes between its steps.
template <typename T>
struct Scratch {
  T *partials, *gram, *l1, *r1_inverse, *q1;
  Scratch(void* scratch, int w) {
    partials = static_cast<T*>(scratch);
    gram = partials + int64_t(kPanelTallBlocks) * kN * kN;
    l1 = gram + kN * kN;
    r1_inverse = l1 + w * w;
    q1 = r1_inverse + w * w;
  }
};

inline void check_panel_cholqr2_args(const PanelCholqr2Args& args) {
  check_first_factor_width(args.w);
  if (args.m < args.w || args.lda < args.w)
    throw std::invalid_argument("solvers: panel_cholqr2: a " + std::to_string(args.m) + " × " +
                                std::to_string(args.w) + " panel with row stride " + std::to_string(args.lda) +
                                " (it needs m >= w and a row stride >= w)");
}

// The passes in order, each through run: run.tall(pass, blocks), run.reduce(partials, count,
// out, w), run.first_factor(args), run.factors(args, limit).
template <typename T, typename Runner>
void steps(const PanelCholqr2Args& args, real_t<T> limit, Runner& run) {
  const int w = args.w;
  const int64_t m = args.m, chunks = (m + kN - 1) / kN;
  const int blocks = int(std::min<int64_t>(chunks, kPanelTallBlocks));
  const T* a = static_cast<const T*>(args.a);
  T* out = static_cast<T*>(args.out);
  const Scratch<T> s(args.scratch, w);
  run.tall(Tall<T>{a, args.lda, m, w, nullptr, nullptr, nullptr, s.partials}, blocks);
  run.reduce(s.partials, blocks, s.gram, w);
  run.first_factor(FirstFactorArgs{w, s.gram, s.l1, s.r1_inverse, args.status});
  run.tall(Tall<T>{a, args.lda, m, w, s.r1_inverse, s.q1, nullptr, s.partials}, blocks);
  run.reduce(s.partials, blocks, s.gram, w);
  run.factors(PanelFactorsArgs{w, s.gram, s.q1, s.l1, out, nullptr, args.status}, limit);
  const T* k = out + w * w;     // V₂ = Q₁[w:] K, V₁ above it
  run.tall(Tall<T>{s.q1, w, m, w, k, static_cast<T*>(args.v), out, nullptr}, int(chunks));
}

}  // namespace panel_cholqr2
}  // namespace solvers
