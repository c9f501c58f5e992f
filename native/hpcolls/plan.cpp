#include "hpcolls/plan.h"

#include <algorithm>

#include "hpcolls/collective_args.h"

namespace hpcolls {

namespace {

size_t chunks_of(size_t bytes) { return (bytes + kChunkBytes - 1) / kChunkBytes; }

// Whether a small-message kernel takes a call of `bytes` (Reduce_scatter: its largest block).
bool small_kernel_fits(const PlanInputs& in, size_t bytes) {
  return in.threads_override == 0 && oneshot_small_fits(in.nranks, in.ll_mode, chunks_of(bytes), in.max_blocks);
}

// Which kernel a whole Allreduce of `bytes` runs, from the algorithm request, the scratch and the
// size table; None when no kernel takes it whole.
Kernel allreduce_kernel(const PlanInputs& in, size_t bytes) {
  const bool fits1 = oneshot_half_bytes(bytes, in.nranks) <= in.half_bytes;
  const bool fits2 = twoshot_half_bytes(bytes, in.nranks) <= in.half_bytes;
  bool oneshot = false, twoshot = false;
  switch (in.mode) {
    case AlgoMode::OneShot: oneshot = fits1; break;
    case AlgoMode::TwoShot: twoshot = fits2; break;
    default:
      oneshot = fits1 && (bytes <= in.oneshot_max_bytes || in.nranks == 1);
      twoshot = !oneshot && fits2 && bytes <= in.twoshot_max_bytes;
  }
  if (twoshot) return Kernel::AllreduceTwoShot;
  if (!oneshot) return Kernel::None;
  // A forced block size (diagnosis) keeps the general kernel, as does a diagnostic LL mode.
  return small_kernel_fits(in, bytes) ? Kernel::AllreduceOneShotSmall : Kernel::AllreduceOneShot;
}

// Allgather has no diagnostic LL variants: a communicator in another mode leaves it to MPI. The
// small-message kernel where it fits (bytes: a rank's block), as Allreduce, else the general one.
Kernel allgather_kernel(const PlanInputs& in, size_t bytes) {
  const bool fits = oneshot_half_bytes(bytes, in.nranks) <= in.half_bytes;
  if (!fits || in.ll_mode != 0) return Kernel::None;
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
  if (need > in.half_bytes || in.ll_mode != 0) return Kernel::None;
  const bool small = small_kernel_fits(in, bytes);
  if (bcast)
    return small && bytes <= kBcastSmallMaxBytes && oneshot_half_bytes(bytes, in.nranks) <= in.half_bytes
               ? Kernel::BcastOneShotSmall
               : Kernel::BcastOneShot;
  if (collective == Collective::Reduce) return small ? Kernel::ReduceOneShotSmall : Kernel::ReduceOneShot;
  return small ? Kernel::ReduceScatterOneShotSmall : Kernel::ReduceScatterOneShot;
}

Kernel kernel_for(const PlanInputs& in, Collective collective, size_t bytes) {
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
  const size_t items = p.kernel == Kernel::AllreduceOneShot   ? chunks << oneshot_lane_shift(in.nranks)
                       : p.kernel == Kernel::AllgatherOneShot ? chunks * size_t(in.nranks)
                       : rooted                               ? std::max(chunks, size_t(in.nranks))
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

size_t largest_message(const PlanInputs& in, Collective collective) {
  const size_t one = capacity(in, Algo::OneShot), two = capacity(in, Algo::TwoShot);
  if (collective == Collective::Allgather) return one;
  if (collective != Collective::Allreduce) {  // the inverse of {bcast,reduce}_half_bytes, whole chunks
    const size_t lines = in.half_bytes / 16;
    if (lines <= kHandshakeLines) return 0;
    const size_t per_chunk = kLinesPerChunk * (collective == Collective::Bcast ? 1 : size_t(in.nranks));
    return (lines - kHandshakeLines) / per_chunk * kChunkBytes;
  }
  switch (in.mode) {  // as allreduce_kernel decides
    case AlgoMode::OneShot: return one;
    case AlgoMode::TwoShot: return two;
    default:
      if (in.nranks == 1) return one;
      // Whole chunks: the thresholds need not be (one and two are).
      return std::max(std::min(one, in.oneshot_max_bytes), std::min(two, in.twoshot_max_bytes)) / kChunkBytes *
             kChunkBytes;
  }
}

size_t small_oneshot_max_bytes(const PlanInputs& in) {
  const bool small = in.threads_override == 0 && oneshot_small_fits(in.nranks, in.ll_mode, 1, in.max_blocks);
  return small ? oneshot_small_max_bytes(in.max_blocks) : 0;
}

Plan plan(const PlanInputs& in, Collective collective, size_t bytes, DType dtype, Op op) {
  Plan p;
  const bool bytes_only = moves_bytes(collective);
  if (!bytes_only && !op_supported(dtype, op)) return p;
  p.kernel = kernel_for(in, collective, bytes);
  p.piece_bytes = bytes;
  p.pieces = 1;
  if (p.kernel == Kernel::None) {
    p.piece_bytes = largest_message(in, collective);
    if (p.piece_bytes < (bytes_only ? 1 : dtype_size(dtype))) return Plan{};  // not even one element per piece
    p.pieces = (bytes + p.piece_bytes - 1) / p.piece_bytes;
    p.kernel = kernel_for(in, collective, p.piece_bytes);
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
    default: return "";
  }
}

const char* collective_name(Collective c) {
  constexpr const char* kNames[] = {"allreduce", "allgather", "bcast", "reduce", "reduce_scatter"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(Collective::kCount), "a name per Collective");
  return int(c) >= 0 && c < Collective::kCount ? kNames[int(c)] : "allreduce";
}

Algo algo_of(Kernel k) { return k == Kernel::AllreduceTwoShot ? Algo::TwoShot : Algo::OneShot; }

}  // namespace hpcolls
