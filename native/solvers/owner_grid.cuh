// Owner-computes for matrices of order up to 64: a 32 × 32 grid of threads, thread (r, c)
// owning the 2 × 2 entries (r + 32a, c + 32b), a, b = 0..1, of every such matrix (cyclic, so
// that a trailing part stays spread over all threads). (A 16 × 16 grid of 4 × 4 entries was
// slower: its 8 warps issue too little between a round's barriers;
// docs/PERFORMANCE.md#solver-panel-owner-grid.) On the GPU the entries live in the
// thread's registers and a column factorization or triangular solve is one barrier a column:
// the owners of the next column post it to shared memory, everybody applies it to their own
// entries. On the host the same step code runs the kThreads "threads" one after the other
// (panel_factors_host.cu), which is what the CPU tests check the GPU's arithmetic by.
//
// An executor Ex provides: Ex::Owned<T> (one matrix's entries: of(me) is a thread's Tile),
// each(f) (f(me) for the calling thread, or for all of them in turn on the host), sync() (a
// barrier) and any(f) (a barrier that also tells whether f(me) held for some thread). Below
// them, what the grid's users share: entry loops, fill / put / stage (registers from a function,
// to memory, shared memory from a function), the sweep with its posts, and products of shared
// kN × kN operands (panel_factors_owned.cuh's w × w steps, panel_cholqr2_device.cu's tall
// products, a chunk of 64 rows at a time).
#pragma once

#include <cstdint>
#include <vector>

#include "scalar.cuh"
#include "unroll.cuh"

namespace solvers {
namespace owner_grid {

constexpr int kGrid = 32;              // threads along each side of the grid
constexpr int kTile = 2;               // rows (and columns) of a matrix each thread owns
constexpr int kN = kGrid * kTile;      // 64: the largest order
constexpr int kThreads = kGrid * kGrid;
constexpr int kLd = kN + 1;            // shared matrices' row stride: a column's entries in distinct banks

// Thread (r, c) of the grid; on the GPU thread r * kGrid + c, so that a warp's loads of a row run
// along it.
struct Me {
  int r, c;
  __host__ __device__ int row(int a) const { return r + kGrid * a; }
  __host__ __device__ int col(int b) const { return c + kGrid * b; }
  __host__ __device__ int id() const { return r * kGrid + c; }
};

template <typename T>
struct Tile {
  T v[kTile][kTile];
};

// Entry (i, j) of the row-major w × w matrix p read as the kN × kN matrix diag(p, pad · I),
// with only its lower triangle where `lower`.
template <typename T>
struct Padded {
  const T* p;
  int w;
  T pad;
  bool lower;
  __host__ __device__ T operator()(int i, int j) const {
    if (lower && j > i) return T(0);
    return i < w && j < w ? p[int64_t(i) * w + j] : T(i == j ? pad : T(0));
  }
};

// Which entries of a triangular matrix can be nonzero. Tile (a, b) holds entries below the
// diagonal only where a > b and above it only where a < b (r, c < kGrid), whatever the thread: a
// triangular matrix's other tiles are zero, which the compiler then knows (no registers).
enum class Part { all, lower, upper };

template <Part part>
__host__ __device__ constexpr bool may_be_nonzero(int a, int b) {
  return part == Part::all || (part == Part::lower ? a >= b : a <= b);
}

// f(i, j, entry) for each of the thread's entries (unrolled on the GPU: registers, not memory);
// those outside `part` are set to zero instead.
#pragma nv_exec_check_disable
template <typename T, Part part = Part::all, typename F>
__host__ __device__ inline void entries(Me me, Tile<T>& t, F&& f) {
  SOLVERS_UNROLL
  for (int a = 0; a < kTile; ++a) {
    SOLVERS_UNROLL
    for (int b = 0; b < kTile; ++b) {
      if (may_be_nonzero<part>(a, b)) f(me.row(a), me.col(b), t.v[a][b]);
      else t.v[a][b] = T(0);
    }
  }
}

// f(i, j, entry) for the thread's entries within `part` of a matrix kept in shared memory
// (kN × kLd) where registers run short: still each thread's own, read and written without
// barriers.
#pragma nv_exec_check_disable
template <typename T, Part part = Part::all, typename F>
__host__ __device__ inline void entries_in(Me me, T* m, F&& f) {
  SOLVERS_UNROLL
  for (int a = 0; a < kTile; ++a) {
    SOLVERS_UNROLL
    for (int b = 0; b < kTile; ++b)
      if (may_be_nonzero<part>(a, b)) f(me.row(a), me.col(b), m[me.row(a) * kLd + me.col(b)]);
  }
}

// Every thread's entries set to value(i, j).
#pragma nv_exec_check_disable
template <typename T, typename Ex, typename Owned, typename F>
__host__ __device__ inline void fill(const Ex& ex, Owned& x, F&& value) {
  ex.each([&](Me me) { entries<T>(me, x.of(me), [&](int i, int j, T& v) { v = value(i, j); }); });
}

// Entry (i, j) of x, for i, j < n, into dst[i * ld + j] (dst[j * ld + i] where `adjoint`,
// conjugated).
#pragma nv_exec_check_disable
template <typename T, typename Ex, typename Owned>
__host__ __device__ void put(const Ex& ex, Owned& x, T* dst, int64_t ld, int n, bool adjoint = false) {
  ex.each([&](Me me) {
    entries<T>(me, x.of(me), [&](int i, int j, T& v) {
      if (i < n && j < n) {
        if (adjoint) dst[j * ld + i] = conj(v);
        else dst[i * ld + j] = v;
      }
    });
  });
}

// f(i, j) for each thread's positions (an index loop in the grid's layout, no matrix).
#pragma nv_exec_check_disable
template <typename Ex, typename F>
__host__ __device__ void positions(const Ex& ex, F&& f) {
  ex.each([&](Me me) {
    SOLVERS_UNROLL
    for (int a = 0; a < kTile; ++a) {
      SOLVERS_UNROLL
      for (int b = 0; b < kTile; ++b) f(me.row(a), me.col(b));
    }
  });
}

// value(i, j) into the shared matrix dst, each thread its own entries.
#pragma nv_exec_check_disable
template <typename T, typename Ex, typename F>
__host__ __device__ void stage(const Ex& ex, T* dst, F&& value) {
  positions(ex, [&](int i, int j) { dst[i * kLd + j] = value(i, j); });
}

// Where column or row j's posts go: three buffers of kN in turn, so that the one posted in
// round j - 1 can be read in rounds j and j + 1 while round j posts the next.
constexpr int kPostWays = 3;

template <typename T>
__host__ __device__ inline T* post_of(T* posts, int j) {
  return posts + (j % kPostWays) * kN;
}

// Where the thread owns column (row) j < kN, its entries there into the posts for j.
template <typename T>
__host__ __device__ void post_column(Me me, Tile<T>& t, T* posts, int j) {
  entries<T>(me, t, [&](int i, int c, T& v) {
    if (c == j) post_of(posts, j)[i] = v;
  });
}
// post_column for a matrix kept in shared memory (kN × kLd), all of the thread's entries there.
template <typename T>
__host__ __device__ void post_column_in(Me me, const T* m, T* posts, int j) {
  SOLVERS_UNROLL
  for (int a = 0; a < kTile; ++a) {
    SOLVERS_UNROLL
    for (int b = 0; b < kTile; ++b)
      if (me.col(b) == j) post_of(posts, j)[me.row(a)] = m[me.row(a) * kLd + j];
  }
}
template <typename T>
__host__ __device__ void post_row(Me me, Tile<T>& t, T* posts, int j) {
  entries<T>(me, t, [&](int i, int c, T& v) {
    if (i == j) post_of(posts, j)[c] = v;
  });
}

// t += lhs · rhs over the inner index 0..kN-1 (lhs(i, c), rhs(c, j)): the thread's kTile + kTile
// operands of each c loaded once for its kTile² products, c in order (the same bits every run).
#pragma nv_exec_check_disable
template <typename T, typename L, typename R>
__host__ __device__ void add_product(Me me, Tile<T>& t, L&& lhs, R&& rhs) {
  SOLVERS_UNROLL_2
  for (int c = 0; c < kN; ++c) {
    T x[kTile], y[kTile];
    SOLVERS_UNROLL
    for (int a = 0; a < kTile; ++a) x[a] = lhs(me.row(a), c);
    SOLVERS_UNROLL
    for (int b = 0; b < kTile; ++b) y[b] = rhs(c, me.col(b));
    SOLVERS_UNROLL
    for (int a = 0; a < kTile; ++a) {
      SOLVERS_UNROLL
      for (int b = 0; b < kTile; ++b) t.v[a][b] += x[a] * y[b];
    }
  }
}

// t = lhs · rhs, as add_product.
#pragma nv_exec_check_disable
template <typename T, typename L, typename R>
__host__ __device__ void product(Me me, Tile<T>& t, L&& lhs, R&& rhs) {
  entries<T>(me, t, [](int, int, T& v) { v = T(0); });
  add_product(me, t, lhs, rhs);
}

// A column sweep, one barrier a column: step(me, j) applies column j (posted by its owners in
// the previous round) to the thread's entries, then, where the thread owns column j + 1, posts
// it; step(me, -1) only posts column 0. A step returns false to stop the sweep (every thread
// alike: it decides from posted values); the sweep then returns false.
#pragma nv_exec_check_disable
template <typename Ex, typename Step>
__host__ __device__ inline bool sweep(const Ex& ex, int n, Step&& step) {
  for (int j = -1; j < n; ++j) {
    bool go = true;
    ex.each([&](Me me) { go = step(me, j) && go; });
    if (!go) return false;
    ex.sync();
  }
  return true;
}

// The GPU's executor: one thread block of kThreads threads, its entries in registers.
struct BlockGrid {
  template <typename T>
  struct Owned {
    Tile<T> tile;
    __device__ Tile<T>& of(Me) { return tile; }
  };
  __device__ static Me me() { return Me{int(threadIdx.x) / kGrid, int(threadIdx.x) % kGrid}; }
  template <typename F>
  __device__ void each(F&& f) const {
    f(me());
  }
  __device__ void sync() const { __syncthreads(); }
  template <typename F>
  __device__ bool any(F&& f) const {
    bool mine = false;
    each([&](Me me) { mine = f(me); });
    return __syncthreads_or(mine) != 0;
  }
};

// The host's executor: the threads one after the other, their entries in memory.
struct HostGrid {
  // (of() is host and device code in name only: the step code's lambdas, which call it, are;
  // the constructor and destructor are written out so that they are host code alone.)
  template <typename T>
  struct Owned {
    std::vector<Tile<T>> storage;
    Tile<T>* tiles;
    Owned() : storage(kThreads), tiles(storage.data()) {}
    ~Owned() {}
    __host__ __device__ Tile<T>& of(Me me) { return tiles[me.id()]; }
  };
  template <typename F>
  void each(F&& f) const {
    for (int r = 0; r < kGrid; ++r)
      for (int c = 0; c < kGrid; ++c) f(Me{r, c});
  }
  void sync() const {}
  template <typename F>
  bool any(F&& f) const {
    bool found = false;
    each([&](Me me) { found = f(me) || found; });
    return found;
  }
};

}  // namespace owner_grid
}  // namespace solvers
