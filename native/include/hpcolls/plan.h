// The one place where the native layer decides how a call runs: plan(collective, bytes, dtype,
// op) gives the kernel, its grid, whether it is launched as a dependent of the kernel before it,
// and the pieces a message larger than any kernel takes is sent in. NativeComm's select(),
// kernel() (log strings), largest_message() and the launch itself all read it; the thresholds come
// from Python's selection table (hpcolls/config.py) through PlanInputs.
#pragma once
#include <cstddef>
#include <cstdint>

#include "hpcolls/types.h"

namespace hpcolls {

// Every kernel variant the native layer launches, named once (kernel_name, algo_of, launch).
enum class Kernel : int {
  None = -1,               // the native path does not take the call (or only in pieces)
  AllreduceOneShotSmall,   // hpcolls/allreduce/oneshot_small.cuh: a thread per chunk, 2/4/8 ranks
  AllreduceOneShot,        // hpcolls/allreduce/oneshot.cuh: a lane per (chunk, rank)
  AllreduceTwoShot,        // hpcolls/allreduce/twoshot.cuh: reduce-scatter + all-gather
  AllgatherOneShot,        // hpcolls/allgather/oneshot.cuh: every block pushed to every rank
  BcastOneShot,            // hpcolls/bcast/oneshot.cuh: the root's push
  ReduceOneShot,           // every rank pushes to the root: Reduce_scatter's kernel (native/hpcolls/reduce_oneshot.cpp)
  ReduceScatterOneShot,    // hpcolls/reduce_scatter/oneshot.cuh: every block pushed to its owner
  ReduceOneShotSmall,      // Reduce_scatter's small-message kernel, the root's block only
  ReduceScatterOneShotSmall,  // hpcolls/reduce_scatter/oneshot_small.cuh: a thread per chunk, 2/4/8 ranks
  AllgatherOneShotSmall,   // hpcolls/allgather/oneshot_small.cuh: a thread per chunk, 2/4/8 ranks
  BcastOneShotSmall,       // hpcolls/bcast/oneshot_small.cuh: a thread per chunk, 2/4/8 ranks
  kCount
};

// Algorithm request: Auto lets the size table decide.
enum class AlgoMode : int { Auto = -1, OneShot = 0, TwoShot = 1 };

// What a communicator's plans depend on; fixed between calls (NativeComm's setters change it).
struct PlanInputs {
  int nranks = 1;
  size_t half_bytes = 0;        // one scratch half (double buffering)
  int max_blocks = 1;           // the rank's share of the SMs: every block of a call is resident
  bool gpu_shared = false;      // other ranks' processes share this GPU (MPS)
  bool dependent_launch = false;  // asked for and available (compute capability 9.0+)
  int threads_override = 0;     // HPCOLLS_THREADS_PER_BLOCK (diagnosis); 0: chosen per call
  int ll_mode = 0;              // 0 unless diagnosing (ll_line.cuh)
  AlgoMode mode = AlgoMode::Auto;
  size_t oneshot_max_bytes = 64 << 10;  // Auto: one-shot up to here (config.py's SELECTION_TABLE)
  size_t twoshot_max_bytes = SIZE_MAX;  // Auto: two-shot up to here
};

struct Plan {
  Kernel kernel = Kernel::None;  // for the whole message, or for each piece
  int blocks = 0;                // grid size
  int threads = 0;               // whole warps
  bool dependent_launch = false;
  size_t piece_bytes = 0;        // bytes per piece: the whole message, or largest_message()
  size_t pieces = 0;             // 1: the whole message in one call; more: in pieces; 0: not native
};

// The plan of a call of `bytes` bytes of (dtype, op) under `in` (Allgather: bytes per rank;
// Reduce_scatter: the largest block's bytes; Allgather and Bcast move bytes and do not look at dtype
// and op); Kernel::None with pieces = 0 for
// a pair the kernels do not carry (op_supported) or a communicator that takes no message at all.
Plan plan(const PlanInputs& in, Collective collective, size_t bytes, DType dtype, Op op);
// The largest message (bytes, whole 16-byte chunks) a single kernel call takes; 0: none.
size_t largest_message(const PlanInputs& in, Collective collective);
// The largest message each algorithm can carry with this scratch and rank count.
size_t capacity(const PlanInputs& in, Algo algo);
// The largest call the small-message one-shot kernel takes under `in` (0: none).
size_t small_oneshot_max_bytes(const PlanInputs& in);

const char* kernel_name(Kernel k);  // "one-shot (small-message kernel)", "one-shot", "two-shot", ""
const char* collective_name(Collective c);  // "allreduce", "allgather", "bcast", "reduce", "reduce_scatter"
Algo algo_of(Kernel k);             // the algorithm a kernel belongs to (error records, select())

}  // namespace hpcolls
