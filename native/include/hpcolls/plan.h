// The one place where the native layer decides how a call runs: plan(collective, bytes, dtype,
// op) gives the kernel, its grid, whether it is launched as a dependent of the kernel before it,
// the protocol it moves the data with, and the pieces a message larger than any kernel takes is
// sent in. NativeComm's select(), kernel() (log strings), largest_message() and the launch itself
// all read it; the thresholds come from the one selection table (selection_table() below,
// docs/ARCHITECTURE.md#protocol-selection), which Python reads through the binding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
  AllreduceOneShotSentinel,   // hpcolls/allreduce/oneshot_sentinel.cuh: one-shot on the sentinel protocol
  AllreduceTwoShotSentinel,   // hpcolls/allreduce/twoshot_sentinel.cuh: two-shot on the sentinel protocol
  AllgatherOneShotSentinel,   // hpcolls/allgather/oneshot_sentinel.cuh
  BcastOneShotSentinel,       // hpcolls/bcast/oneshot_sentinel.cuh
  AllreduceOneShotLL128,   // hpcolls/allreduce/oneshot_ll128.cuh: a warp per LL128 tile, pushed to every rank
  AllreduceTwoShotLL128,   // hpcolls/allreduce/twoshot_ll128.cuh: reduce-scatter + all-gather over LL128 tiles
  kCount
};

// How a kernel's data travels between ranks (docs/ARCHITECTURE.md, "The protocol"), each in a
// scratch region of its own (NativeComm): LL lines (ll_line.cuh, half of every store is flag),
// sentinel polling (sentinel.cuh, every store is data; the receiver polls the payload and re-arms
// it), LL128 (128-byte lines with one flag word, only where a probe showed them whole).
enum class Protocol : int { LL = 0, Sentinel = 1, LL128 = 2, kCount };
constexpr int kProtocols = int(Protocol::kCount);

// Algorithm request: Auto lets the size table decide.
enum class AlgoMode : int { Auto = -1, OneShot = 0, TwoShot = 1 };

// Protocol request (HPCOLLS_PROTOCOL, or a communicator's own for the bench): Auto lets the
// selection table decide; a forced protocol is taken where the collective has a kernel on it and
// its region can hold the message, else the call stays on LL.
enum class ProtocolMode : int { Auto = -1, LL = 0, Sentinel = 1, LL128 = 2 };

// One row of the selection table: calls of `collective` on at most `max_ranks` ranks. The built-in
// entries are constants the lead measures on the GPU machine (docs/ARCHITECTURE.md#protocol-selection,
// docs/PERFORMANCE.md); `python -m hpcolls tune` measures a communicator's own (PlanInputs::rows).
struct SelectionRow {
  Collective collective;
  int max_ranks;
  size_t ll_max;               // LL up to here; above it sentinel (or LL128 up to ll128_max)
  size_t ll128_max;            // LL128, where available, from ll_max up to here (0: never by default)
  size_t ll_oneshot_max;       // Allreduce on LL: one-shot up to here, two-shot above
  size_t sentinel_oneshot_max; // Allreduce on sentinel (and LL128): one-shot up to here, two-shot above
  size_t native_max_vs_nccl;   // where NCCL is the alternative, the native path takes up to here whole
};

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
  // Overrides of the selection table (HPCOLLS_ONESHOT_MAX_BYTES, HPCOLLS_TWOSHOT_MAX_BYTES); unset:
  // the table's. Allreduce: one-shot up to oneshot_max_bytes; the native path takes a message whole
  // up to twoshot_max_bytes (larger: NCCL or pieces, hpcolls/routes/native.py).
  std::optional<size_t> oneshot_max_bytes;
  std::optional<size_t> twoshot_max_bytes;
  ProtocolMode protocol = ProtocolMode::Auto;
  // One half of each protocol's scratch region (0: the region is absent and the protocol off).
  // half_bytes above is LL's.
  size_t sentinel_half_bytes = 0;
  size_t ll128_half_bytes = 0;
  bool ll128_available = false;   // the torn-line probe showed LL128 lines arrive whole here
  // NCCL carries what the native path declines (every rank has its own GPU): the native path then
  // takes a message whole only up to the table's native_max_vs_nccl. Otherwise the alternative is
  // the native kernels in pieces, and a message that fits a kernel whole is always taken whole.
  bool nccl_alternative = false;
  // The communicator's own selection rows (`python -m hpcolls tune`'s, measured on this machine at
  // this rank count, handed over by hpcolls/tuned_table.py): a collective they have a row for
  // covering the rank count reads that row instead of the built-in table's. Empty: the built-in
  // table (selection_row below). Checked by selection_rows_problem before they get here.
  std::vector<SelectionRow> rows;
};

// The built-in table, rows in (collective, max_ranks) order, and the row a call reads (the first
// of its collective whose max_ranks covers the rank count; past the last, the last).
const SelectionRow* selection_table(size_t* rows);
const SelectionRow& selection_row(Collective collective, int nranks);
// The row a call under `in` reads: the first of in.rows naming the collective whose max_ranks
// covers the rank count, else the built-in table's.
const SelectionRow& selection_row(const PlanInputs& in, Collective collective);
// Why `rows` cannot be a communicator's selection rows, naming the row and the field ("" when they
// can): a known collective, max_ranks 1..kMaxRanks and increasing among a collective's rows, and
// LL128's range starting where LL's ends (ll128_max 0 or >= ll_max).
std::string selection_rows_problem(const std::vector<SelectionRow>& rows);

struct Plan {
  Kernel kernel = Kernel::None;  // for the whole message, or for each piece
  Protocol protocol = Protocol::LL;  // the kernel's (protocol_of)
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
// The largest message each algorithm can carry with this scratch and rank count (on LL).
size_t capacity(const PlanInputs& in, Algo algo);
// The largest call the small-message one-shot kernel takes under `in` (0: none).
size_t small_oneshot_max_bytes(const PlanInputs& in);

const char* kernel_name(Kernel k);  // "one-shot (small-message kernel)", "one-shot", "two-shot", ""
const char* collective_name(Collective c);  // "allreduce", "allgather", "bcast", "reduce", "reduce_scatter"
Algo algo_of(Kernel k);             // the algorithm a kernel belongs to (error records, select())
Protocol protocol_of(Kernel k);     // the protocol a kernel moves data with
const char* protocol_name(Protocol p);  // "LL", "sentinel", "LL128"

}  // namespace hpcolls
