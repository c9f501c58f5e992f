#include "hpcolls/plan.h"

#include <algorithm>

#include "hpcolls/collective_args.h"
#include "hpcolls/sentinel_layout.h"

namespace hpcolls {

namespace {

size_t chunks_of(size_t bytes) { return (bytes + kChunkBytes - 1) / kChunkBytes; }

// Whether a small-message kernel takes a call of `bytes` (Reduce_scatter: its largest block).
bool small_kernel_fits(const PlanInputs& in, size_t bytes) {
  return in.threads_override == 0 && oneshot_small_fits(in.nranks, in.ll_mode, chunks_of(bytes), in.max_blocks);
}

constexpr size_t KiB = size_t(1) << 10, MiB = size_t(1) << 20, kNoLimit = SIZE_MAX;

// protocol-selection (docs/ARCHITECTURE.md#protocol-selection): the one table, its entries the
// crossovers measured on the GPU machine with the ranks sharing one GPU (docs/PERFORMANCE.md,
// #protocols-medium; `python -m hpcolls tune` measures them again on a user's machine). Measured:
// LL's one-shot limits (ll_oneshot_max, on one H200), where sentinel takes over from LL (ll_max)
// and sentinel one-shot's limit at 2 and 4 ranks (on one H100); LL128 loses to sentinel wherever
// it beats LL there, so auto never takes it (ll128_max 0). Not measured: the rows past 4 ranks
// (smaller limits as the ranks' shares of the GPU shrink, guessed) and native_max_vs_nccl, what
// the native path takes where NCCL could run (4 MiB for Allreduce, 8 MiB per rank for the pure
// data movement). Bytes are the plan's: Allgather's a rank's block.
constexpr SelectionRow kTable[] = {
    // collective, max ranks, ll_max, ll128_max, ll_oneshot_max, sentinel_oneshot_max, native_max_vs_nccl
    {Collective::Allreduce, 2, 256 * KiB, 0, 256 * KiB, 1 * MiB, 4 * MiB},
    {Collective::Allreduce, 4, 128 * KiB, 0, 128 * KiB, 512 * KiB, 4 * MiB},
    {Collective::Allreduce, 8, 64 * KiB, 0, 64 * KiB, 256 * KiB, 4 * MiB},
    {Collective::Allreduce, 32, 16 * KiB, 0, 16 * KiB, 64 * KiB, 4 * MiB},
    {Collective::Allgather, 2, 256 * KiB, 0, 0, 0, 8 * MiB},
    {Collective::Allgather, 4, 128 * KiB, 0, 0, 0, 8 * MiB},
    {Collective::Allgather, 32, 16 * KiB, 0, 0, 0, 8 * MiB},
    {Collective::Bcast, 4, 128 * KiB, 0, 0, 0, 8 * MiB},
    {Collective::Bcast, 32, 32 * KiB, 0, 0, 0, 8 * MiB},
    // No sentinel kernel for these yet: LL at every size, as before.
    {Collective::Reduce, 32, kNoLimit, 0, 0, 0, kNoLimit},
    {Collective::ReduceScatter, 32, kNoLimit, 0, 0, 0, kNoLimit},
};

// Where the native kernels in pieces are the alternative, a message that fits a kernel whole is
// taken whole: the pieces would be the same kernels, launched more often.
constexpr size_t kAllreduceMaxVsPieces = kNoLimit;

// Whether protocol p has a kernel for `collective` (the Kernel list).
bool carries(Protocol p, Collective collective) {
  switch (p) {
    case Protocol::LL: return true;
    case Protocol::Sentinel:
      return collective == Collective::Allreduce || collective == Collective::Allgather ||
             collective == Collective::Bcast;
    case Protocol::LL128: return collective == Collective::Allreduce;
    default: return false;
  }
}

// Whether a call may take protocol p: LL always; another where its region exists (and LL128's
// probe passed), the collective has a kernel on it, and no diagnosis setting asks for the LL
// kernels' variants.
bool usable(const PlanInputs& in, Protocol p, Collective collective) {
  if (p == Protocol::LL) return true;
  if (in.ll_mode != 0 || in.threads_override != 0 || !carries(p, collective)) return false;
  return p == Protocol::Sentinel ? in.sentinel_half_bytes > 0 : in.ll128_half_bytes > 0 && in.ll128_available;
}

Protocol protocol_for(const PlanInputs& in, Collective collective, size_t bytes) {
  if (in.protocol != ProtocolMode::Auto) {
    const auto forced = static_cast<Protocol>(in.protocol);
    return usable(in, forced, collective) ? forced : Protocol::LL;
  }
  const SelectionRow& row = selection_row(in, collective);
  if (bytes <= row.ll_max) return Protocol::LL;
  if (bytes <= row.ll128_max && usable(in, Protocol::LL128, collective)) return Protocol::LL128;
  return usable(in, Protocol::Sentinel, collective) ? Protocol::Sentinel : Protocol::LL;
}

// Allreduce's one-shot limit and the native path's limit on a whole message (Allreduce: two-shot's),
// from the overrides or the table.
size_t oneshot_limit(const PlanInputs& in, Protocol p) {
  const SelectionRow& row = selection_row(in, Collective::Allreduce);
  return in.oneshot_max_bytes.value_or(p == Protocol::LL ? row.ll_oneshot_max : row.sentinel_oneshot_max);
}
size_t native_limit(const PlanInputs& in, Collective collective) {
  const SelectionRow& row = selection_row(in, collective);
  if (collective != Collective::Allreduce) return in.nccl_alternative ? row.native_max_vs_nccl : kNoLimit;
  return in.twoshot_max_bytes.value_or(in.nccl_alternative ? row.native_max_vs_nccl : kAllreduceMaxVsPieces);
}

// Which algorithm takes a whole Allreduce of `bytes` on protocol p, from the algorithm request,
// whether each algorithm's need fits p's region, and the size table; None when neither takes it.
enum class Whole { None, OneShot, TwoShot };
Whole allreduce_algorithm(const PlanInputs& in, Protocol p, size_t bytes, bool fits1, bool fits2) {
  switch (in.mode) {
    case AlgoMode::OneShot: return fits1 ? Whole::OneShot : Whole::None;
    case AlgoMode::TwoShot: return fits2 ? Whole::TwoShot : Whole::None;
    default:
      if (fits1 && (bytes <= oneshot_limit(in, p) || in.nranks == 1)) return Whole::OneShot;
      return fits2 && bytes <= native_limit(in, Collective::Allreduce) ? Whole::TwoShot : Whole::None;
  }
}

// Which kernel a whole Allreduce of `bytes` runs on LL; None when no kernel takes it whole.
Kernel allreduce_kernel(const PlanInputs& in, size_t bytes) {
  const Whole w = allreduce_algorithm(in, Protocol::LL, bytes, oneshot_half_bytes(bytes, in.nranks) <= in.half_bytes,
                                      twoshot_half_bytes(bytes, in.nranks) <= in.half_bytes);
  if (w == Whole::TwoShot) return Kernel::AllreduceTwoShot;
  if (w == Whole::None) return Kernel::None;
  // A forced block size (diagnosis) keeps the general kernel, as does a diagnostic LL mode.
  return small_kernel_fits(in, bytes) ? Kernel::AllreduceOneShotSmall : Kernel::AllreduceOneShot;
}

// Which LL128 kernel a whole Allreduce of `bytes` runs, in the LL128 region. Only reached where
// usable(): the probe agreed and no diagnosis setting is on.
Kernel allreduce_ll128_kernel(const PlanInputs& in, size_t bytes) {
  const Whole w = allreduce_algorithm(in, Protocol::LL128, bytes,
                                      ll128_oneshot_half_bytes(bytes, in.nranks) <= in.ll128_half_bytes,
                                      ll128_twoshot_half_bytes(bytes, in.nranks) <= in.ll128_half_bytes);
  return w == Whole::TwoShot ? Kernel::AllreduceTwoShotLL128
         : w == Whole::OneShot ? Kernel::AllreduceOneShotLL128
                               : Kernel::None;
}

// Allgather has no diagnostic LL variants: a communicator in another mode leaves it to MPI. The
// small-message kernel where it fits (bytes: a rank's block), as Allreduce, else the general one.
Kernel allgather_kernel(const PlanInputs& in, size_t bytes) {
  const bool fits = oneshot_half_bytes(bytes, in.nranks) <= in.half_bytes;
  if (!fits || in.ll_mode != 0 || bytes > native_limit(in, Collective::Allgather)) return Kernel::None;
  return small_kernel_fits(in, bytes) ? Kernel::AllgatherOneShotSmall : Kernel::AllgatherOneShot;
}

// Bcast's small-message kernel stores N chunks for each chunk of the message (the non-roots' empty
// ones): measured on one H100 at 2 and 4 ranks (docs/PERFORMANCE.md, 2026-12-06), it beat the
// general kernel up to 512 B (1.09-1.18x the native Allreduce's device time against 1.21-1.35x)
// and lost from 4096 B (1.19-1.35x against 1.06-1.14x).
constexpr size_t kBcastSmallMaxBytes = 512;

// The rooted collectives and Reduce_scatter, LL mode 0 only: the small-message kernel where it
// fits, as Allreduce, else the general one; Bcast's up to kBcastSmallMaxBytes, and with a slot per
// rank (the general one holds the root's message once), so with its own room in the scratch.
Kernel rooted_kernel(const PlanInputs& in, Collective collective, size_t bytes) {
  const bool bcast = collective == Collective::Bcast;
  const size_t need = bcast ? bcast_half_bytes(bytes) : reduce_half_bytes(bytes, in.nranks);
  if (need > in.half_bytes || in.ll_mode != 0 || bytes > native_limit(in, collective)) return Kernel::None;
  const bool small = small_kernel_fits(in, bytes);
  if (bcast)
    return small && bytes <= kBcastSmallMaxBytes && oneshot_half_bytes(bytes, in.nranks) <= in.half_bytes
               ? Kernel::BcastOneShotSmall
               : Kernel::BcastOneShot;
  if (collective == Collective::Reduce) return small ? Kernel::ReduceOneShotSmall : Kernel::ReduceOneShot;
  return small ? Kernel::ReduceScatterOneShotSmall : Kernel::ReduceScatterOneShot;
}

// The sentinel protocol's kernel for a whole call of `bytes`, None when its region cannot hold it
// or the limits send it elsewhere (as the LL ones above decide).
Kernel sentinel_kernel(const PlanInputs& in, Collective collective, size_t bytes) {
  const size_t room = sentinel_chunks(in.sentinel_half_bytes);
  const size_t chunks = chunks_of(bytes);
  const bool within = bytes <= native_limit(in, collective);
  switch (collective) {
    case Collective::Allreduce: {
      const Whole w = allreduce_algorithm(in, Protocol::Sentinel, bytes,
                                          sentinel_oneshot_chunks(bytes, in.nranks) <= room,
                                          sentinel_twoshot_chunks(bytes, in.nranks) <= room);
      return w == Whole::OneShot   ? Kernel::AllreduceOneShotSentinel
             : w == Whole::TwoShot ? Kernel::AllreduceTwoShotSentinel
                                   : Kernel::None;
    }
    case Collective::Allgather:
      return sentinel_oneshot_chunks(bytes, in.nranks) <= room && within ? Kernel::AllgatherOneShotSentinel
                                                                          : Kernel::None;
    case Collective::Bcast: return chunks <= room && within ? Kernel::BcastOneShotSentinel : Kernel::None;
    default: return Kernel::None;
  }
}

// The kernel of a whole call of `bytes` on protocol p (protocol_for's), None when none takes it.
Kernel kernel_for(const PlanInputs& in, Collective collective, Protocol p, size_t bytes) {
  if (p == Protocol::Sentinel) return sentinel_kernel(in, collective, bytes);
  if (p == Protocol::LL128)
    return collective == Collective::Allreduce ? allreduce_ll128_kernel(in, bytes) : Kernel::None;
  switch (collective) {
    case Collective::Allreduce: return allreduce_kernel(in, bytes);
    case Collective::Allgather: return allgather_kernel(in, bytes);
    default: return rooted_kernel(in, collective, bytes);
  }
}

bool moves_bytes(Collective c) { return c == Collective::Allgather || c == Collective::Bcast; }

void set_grid(const PlanInputs& in, size_t bytes, Plan& p) {
  const size_t chunks = chunks_of(bytes);
  // Threads with work: one-shot's general kernel gives each chunk a lane per rank; Allgather's
  // general kernel a thread per chunk of every rank's block; the rooted kernels (both Reduce_scatter
  // kernels) a thread per chunk, and at least one per rank for the handshakes (handshake.cuh); the
  // small-message kernels of Allreduce, Allgather and Bcast a thread per chunk.
  const bool rooted = p.kernel == Kernel::BcastOneShot || p.kernel == Kernel::ReduceOneShot ||
                      p.kernel == Kernel::ReduceScatterOneShot || p.kernel == Kernel::ReduceOneShotSmall ||
                      p.kernel == Kernel::ReduceScatterOneShotSmall;
  // The sentinel kernels: a thread per kSentinelChunksPerThread chunks received (Allgather's of
  // every rank's block), Bcast's at least one per rank for the handshakes. The LL128 kernels: a warp
  // per tile of 30 chunks.
  const size_t per_thread = size_t(kSentinelChunksPerThread);
  const size_t items = p.kernel == Kernel::AllreduceOneShot   ? chunks << oneshot_lane_shift(in.nranks)
                       : p.kernel == Kernel::AllgatherOneShot ? chunks * size_t(in.nranks)
                       : rooted                               ? std::max(chunks, size_t(in.nranks))
                       : p.kernel == Kernel::AllreduceOneShotSentinel || p.kernel == Kernel::AllreduceTwoShotSentinel
                           ? (chunks + per_thread - 1) / per_thread
                       : p.kernel == Kernel::AllgatherOneShotSentinel
                           ? (chunks * size_t(in.nranks) + per_thread - 1) / per_thread
                       : p.kernel == Kernel::BcastOneShotSentinel
                           ? std::max((chunks + per_thread - 1) / per_thread, size_t(in.nranks))
                       : p.protocol == Protocol::LL128 ? ll128_tiles_of(bytes) * 32
                                                       : chunks;
  p.threads = items >= size_t(kThreadsPerBlock) ? kThreadsPerBlock : int((items + 31) / 32 * 32);
  if (in.threads_override > 0) p.threads = in.threads_override;
  p.blocks = int(std::max<size_t>(1, std::min<size_t>(in.max_blocks, (items + p.threads - 1) / p.threads)));
  // A dependent grid starts, and holds its blocks' SM slots, while the call before it still
  // runs: two grids of this rank resident at once. Ranks sharing the GPU (MPS) each have a share
  // of the SMs (max_blocks) sized for one grid; with two grids of a full share waiting on every
  // rank but a late one, their blocks filled the SMs that rank's own kernels needed before it
  // joined (time-outs behind the solver's kernels at 4 ranks on one H200, docs/PERFORMANCE.md).
  // So where the GPU is shared, only a grid of at most half the share is launched as a dependent:
  // two of them hold no more than one grid did before dependent launch.
  p.dependent_launch = in.dependent_launch && (!in.gpu_shared || 2 * p.blocks <= in.max_blocks);
}

}  // namespace

size_t capacity(const PlanInputs& in, Algo algo) {
  // Inverse of {oneshot,twoshot}_half_bytes, rounded down to whole chunks.
  const size_t line_bytes = kLinesPerChunk * 16;
  if (algo == Algo::OneShot) return in.half_bytes / (size_t(in.nranks) * line_bytes) * kChunkBytes;
  return in.half_bytes / (2 * size_t(in.nranks) * line_bytes) * size_t(in.nranks) * kChunkBytes;
}

namespace {

// The largest message a single LL call takes, as the LL kernels decide (whole 16-byte chunks).
size_t ll_largest(const PlanInputs& in, Collective collective) {
  const size_t one = capacity(in, Algo::OneShot), two = capacity(in, Algo::TwoShot);
  const size_t limit = native_limit(in, collective);
  if (collective == Collective::Allgather) return std::min(one, limit) / kChunkBytes * kChunkBytes;
  if (collective != Collective::Allreduce) {  // the inverse of {bcast,reduce}_half_bytes, whole chunks
    const size_t lines = in.half_bytes / 16;
    if (lines <= kHandshakeLines) return 0;
    const size_t per_chunk = kLinesPerChunk * (collective == Collective::Bcast ? 1 : size_t(in.nranks));
    return std::min((lines - kHandshakeLines) / per_chunk * kChunkBytes, limit) / kChunkBytes * kChunkBytes;
  }
  switch (in.mode) {  // as allreduce_kernel decides
    case AlgoMode::OneShot: return one;
    case AlgoMode::TwoShot: return two;
    default:
      if (in.nranks == 1) return one;
      // Whole chunks: the thresholds need not be (one and two are).
      return std::max(std::min(one, oneshot_limit(in, Protocol::LL)), std::min(two, limit)) / kChunkBytes *
             kChunkBytes;
  }
}

// The largest message the sentinel kernels take whole (the inverse of sentinel_kernel's fits).
size_t sentinel_largest(const PlanInputs& in, Collective collective) {
  const size_t room = sentinel_chunks(in.sentinel_half_bytes), n = size_t(in.nranks);
  const size_t limit = native_limit(in, collective);
  const auto whole_chunks = [](size_t b) { return b / kChunkBytes * kChunkBytes; };
  const size_t one = room / n * kChunkBytes, two = room / (2 * n) * n * kChunkBytes;
  switch (collective) {
    case Collective::Allreduce:
      switch (in.mode) {
        case AlgoMode::OneShot: return one;
        case AlgoMode::TwoShot: return two;
        default:
          if (in.nranks == 1) return one;
          return whole_chunks(std::max(std::min(one, oneshot_limit(in, Protocol::Sentinel)), std::min(two, limit)));
      }
    case Collective::Allgather: return whole_chunks(std::min(one, limit));
    case Collective::Bcast: return whole_chunks(std::min(room * kChunkBytes, limit));
    default: return 0;
  }
}

// The largest Allreduce the LL128 kernels take whole, as allreduce_ll128_kernel decides: the
// inverse of ll128_{oneshot,twoshot}_half_bytes in whole tiles (480 bytes, whole chunks).
size_t ll128_largest(const PlanInputs& in) {
  const size_t n = size_t(in.nranks);
  const size_t one = in.ll128_half_bytes / (n * kLL128TileBytes) * kLL128TilePayloadBytes;
  const size_t two = in.ll128_half_bytes / (2 * n * kLL128TileBytes) * n * kLL128TilePayloadBytes;
  switch (in.mode) {
    case AlgoMode::OneShot: return one;
    case AlgoMode::TwoShot: return two;
    default:
      if (in.nranks == 1) return one;
      return std::max(std::min(one, oneshot_limit(in, Protocol::LL128)),
                      std::min(two, native_limit(in, Collective::Allreduce))) / kChunkBytes * kChunkBytes;
  }
}

// The largest message protocol p's kernels take whole (0: none).
size_t protocol_largest(const PlanInputs& in, Collective collective, Protocol p) {
  if (!usable(in, p, collective)) return 0;
  switch (p) {
    case Protocol::LL: return ll_largest(in, collective);
    case Protocol::Sentinel: return sentinel_largest(in, collective);
    default: return collective == Collective::Allreduce ? ll128_largest(in) : 0;
  }
}

bool whole(const PlanInputs& in, Collective collective, size_t bytes) {
  return bytes > 0 && kernel_for(in, collective, protocol_for(in, collective, bytes), bytes) != Kernel::None;
}

}  // namespace

size_t largest_message(const PlanInputs& in, Collective collective) {
  // Each protocol's largest, where the selection gives that size to that protocol; the largest of
  // those a call of that size really takes whole.
  size_t best = 0;
  for (int p = 0; p < kProtocols; ++p) {
    const size_t b = protocol_largest(in, collective, Protocol(p));
    if (b > best && whole(in, collective, b)) best = b;
  }
  return best;
}

size_t small_oneshot_max_bytes(const PlanInputs& in) {
  const bool small = in.threads_override == 0 && oneshot_small_fits(in.nranks, in.ll_mode, 1, in.max_blocks);
  return small ? oneshot_small_max_bytes(in.max_blocks) : 0;
}

Plan plan(const PlanInputs& in, Collective collective, size_t bytes, DType dtype, Op op) {
  Plan p;
  const bool bytes_only = moves_bytes(collective);
  if (!bytes_only && !op_supported(dtype, op)) return p;
  p.protocol = protocol_for(in, collective, bytes);
  p.kernel = kernel_for(in, collective, p.protocol, bytes);
  p.piece_bytes = bytes;
  p.pieces = 1;
  if (p.kernel == Kernel::None) {
    p.piece_bytes = largest_message(in, collective);
    if (p.piece_bytes < (bytes_only ? 1 : dtype_size(dtype))) return Plan{};  // not even one element per piece
    p.pieces = (bytes + p.piece_bytes - 1) / p.piece_bytes;
    p.protocol = protocol_for(in, collective, p.piece_bytes);
    p.kernel = kernel_for(in, collective, p.protocol, p.piece_bytes);
    if (p.kernel == Kernel::None) return Plan{};
  }
  set_grid(in, p.piece_bytes, p);
  return p;
}

const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::AllreduceOneShotSmall: case Kernel::ReduceOneShotSmall:
    case Kernel::ReduceScatterOneShotSmall: case Kernel::AllgatherOneShotSmall:
    case Kernel::BcastOneShotSmall: return "one-shot (small-message kernel)";
    case Kernel::AllreduceOneShot: return "one-shot";
    case Kernel::AllreduceTwoShot: return "two-shot";
    case Kernel::AllgatherOneShot: case Kernel::BcastOneShot: case Kernel::ReduceOneShot:
    case Kernel::ReduceScatterOneShot: return "one-shot";
    case Kernel::AllreduceOneShotSentinel: case Kernel::AllgatherOneShotSentinel:
    case Kernel::BcastOneShotSentinel: return "one-shot (sentinel)";
    case Kernel::AllreduceTwoShotSentinel: return "two-shot (sentinel)";
    case Kernel::AllreduceOneShotLL128: return "one-shot (LL128)";
    case Kernel::AllreduceTwoShotLL128: return "two-shot (LL128)";
    default: return "";
  }
}

const char* collective_name(Collective c) {
  constexpr const char* kNames[] = {"allreduce", "allgather", "bcast", "reduce", "reduce_scatter"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(Collective::kCount), "a name per Collective");
  return int(c) >= 0 && c < Collective::kCount ? kNames[int(c)] : "allreduce";
}

Algo algo_of(Kernel k) {
  return k == Kernel::AllreduceTwoShot || k == Kernel::AllreduceTwoShotSentinel || k == Kernel::AllreduceTwoShotLL128
             ? Algo::TwoShot
             : Algo::OneShot;
}

Protocol protocol_of(Kernel k) {
  switch (k) {
    case Kernel::AllreduceOneShotSentinel: case Kernel::AllreduceTwoShotSentinel:
    case Kernel::AllgatherOneShotSentinel: case Kernel::BcastOneShotSentinel: return Protocol::Sentinel;
    case Kernel::AllreduceOneShotLL128: case Kernel::AllreduceTwoShotLL128: return Protocol::LL128;
    default: return Protocol::LL;
  }
}

const char* protocol_name(Protocol p) {
  constexpr const char* kNames[] = {"LL", "sentinel", "LL128"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(kProtocols), "a name per Protocol");
  return int(p) >= 0 && int(p) < kProtocols ? kNames[int(p)] : "LL";
}

const SelectionRow* selection_table(size_t* rows) {
  *rows = sizeof(kTable) / sizeof(kTable[0]);
  return kTable;
}

const SelectionRow& selection_row(Collective collective, int nranks) {
  const SelectionRow* found = nullptr;
  for (const SelectionRow& row : kTable) {
    if (row.collective != collective) continue;
    found = &row;  // past the last row of the collective: its last
    if (nranks <= row.max_ranks) break;
  }
  return found != nullptr ? *found : kTable[0];
}

const SelectionRow& selection_row(const PlanInputs& in, Collective collective) {
  for (const SelectionRow& row : in.rows)
    if (row.collective == collective && in.nranks <= row.max_ranks) return row;
  return selection_row(collective, in.nranks);
}

std::string selection_rows_problem(const std::vector<SelectionRow>& rows) {
  int last_max_ranks[int(Collective::kCount)] = {};
  for (size_t i = 0; i < rows.size(); ++i) {
    const SelectionRow& r = rows[i];
    const std::string row = "row " + std::to_string(i);
    if (int(r.collective) < 0 || r.collective >= Collective::kCount) return row + ": collective is not one the plan knows";
    const std::string where = row + " (" + collective_name(r.collective) + "): ";
    if (r.max_ranks < 1 || r.max_ranks > kMaxRanks)
      return where + "max_ranks " + std::to_string(r.max_ranks) + " is not 1.." + std::to_string(kMaxRanks);
    int& last = last_max_ranks[int(r.collective)];
    if (r.max_ranks <= last)  // the lookup takes the first row covering the rank count
      return where + "max_ranks " + std::to_string(r.max_ranks) + " does not exceed the collective's earlier row's " +
             std::to_string(last);
    last = r.max_ranks;
    // LL128 takes over from LL: a range ending below ll_max would be empty, a sign of a mixed-up row.
    if (r.ll128_max != 0 && r.ll128_max < r.ll_max)
      return where + "ll128_max " + std::to_string(r.ll128_max) + " is neither 0 nor >= ll_max " +
             std::to_string(r.ll_max);
  }
  return "";
}

}  // namespace hpcolls
