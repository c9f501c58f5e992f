// Arguments of one collective launch, as the dispatcher hands them to a kernel launcher.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "hpcolls/ll128_layout.h"
#include "hpcolls/types.h"

namespace hpcolls {

// Threads per block the dispatcher picks (fewer for small calls): every kernel can run this many,
// whatever its register count (255 registers x 256 threads fit the 64 Ki-register file).
constexpr int kThreadsPerBlock = 256;

// Where each rank's block of a Reduce_scatter's send buffer is (bytes from its start) and its
// length in bytes; passed to the kernel by value (kMaxRanks entries).
struct BlockLayout {
  uint32_t offset[kMaxRanks];
  uint32_t bytes[kMaxRanks];
};

struct CollectiveArgs {
  const void* send;
  void* recv;
  size_t bytes;   // count * element size; below 4 GiB, as it fits a scratch half (kernels take 32 bits)
  bool vec_ok;    // both buffers 16-byte aligned: whole chunks move as one vector access
  int blocks;     // grid size, small enough that all blocks are resident at once
  int threads;    // whole warps; a forced size above what the kernel can run is capped at its limit
  cudaStream_t stream;
  bool dependent_launch;  // launch as a programmatic dependent of the previous kernel (dependent_launch.cuh)
  size_t stride = 0;      // Allgather: bytes from one rank's block of recv to the next (vec_ok covers it)
  int root = 0;           // Bcast, Reduce
  const BlockLayout* layout = nullptr;  // Reduce_scatter: the blocks (bytes is the largest block)
  Collective collective = Collective::ReduceScatter;  // Reduce_scatter's kernel: the call's, for time-out records
};

// One-shot gives each 16-byte chunk one thread per rank (lane q pushes to and receives from rank
// q), rounded up to a power of two so that a chunk's lanes are an aligned group inside one warp
// (kMaxRanks <= 32). One rank needs no lanes beyond the one that copies.
inline int oneshot_lane_shift(int nranks) {
  int shift = 0;
  while ((1 << shift) < nranks) ++shift;
  return shift;
}

// Whether a small-message kernel can take a call (allreduce_oneshot_small.cu,
// reduce_scatter_oneshot_small.cu): a rank count it is compiled for, the default LL mode, and a
// thread per 16-byte chunk, in blocks of kThreadsPerBlock threads (kSmallOneShotBlockBytes each)
// that all fit the rank's share of the SMs at once (max_blocks: every block waits on its peers'
// blocks). A forced block size (diagnosis) keeps the general kernels too (plan.cpp).
constexpr int kSmallOneShotRanks[] = {2, 4, 8};  // the small-message kernels are instantiated for these
constexpr size_t kSmallOneShotBlockBytes = size_t(kThreadsPerBlock) * kChunkBytes;
inline size_t oneshot_small_max_bytes(int max_blocks) { return size_t(max_blocks) * kSmallOneShotBlockBytes; }
inline bool oneshot_small_fits(int nranks, int ll_mode, size_t chunks, int max_blocks) {
  bool compiled = false;
  for (int n : kSmallOneShotRanks) compiled |= nranks == n;
  return compiled && ll_mode == 0 && chunks * kChunkBytes <= oneshot_small_max_bytes(max_blocks);
}

// Scratch bytes one half needs for a message of `bytes` bytes on `nranks` ranks.
inline size_t oneshot_half_bytes(size_t bytes, int nranks) {
  const size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  return size_t(nranks) * chunks * kLinesPerChunk * 16;
}
inline size_t twoshot_half_bytes(size_t bytes, int nranks) {
  const size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  const size_t part = (chunks + nranks - 1) / nranks;
  return 2 * size_t(nranks) * part * kLinesPerChunk * 16;  // reduce-scatter + all-gather regions
}

// LL128 (ll128_layout.h). One-shot: a slot of the message's tiles per rank. Two-shot: a
// reduce-scatter and an all-gather region of N slots of a part's tiles each.
inline size_t ll128_oneshot_half_bytes(size_t bytes, int nranks) {
  return size_t(nranks) * ll128_tiles_of(bytes) * kLL128TileBytes;
}
inline size_t ll128_twoshot_half_bytes(size_t bytes, int nranks) {
  const size_t part = (ll128_tiles_of(bytes) + size_t(nranks) - 1) / size_t(nranks);
  return 2 * size_t(nranks) * part * kLL128TileBytes;
}

// Bcast: the root's message, once. Reduce and Reduce_scatter: a slot per rank of the message
// (Reduce_scatter: of the largest block).
inline size_t bcast_half_bytes(size_t bytes) {
  return (kHandshakeLines + (bytes + kChunkBytes - 1) / kChunkBytes * kLinesPerChunk) * 16;
}
inline size_t reduce_half_bytes(size_t bytes, int nranks) {
  return (kHandshakeLines + size_t(nranks) * ((bytes + kChunkBytes - 1) / kChunkBytes) * kLinesPerChunk) * 16;
}

// The sentinel protocol (sentinel.cuh, sentinel_layout.h): payload chunks (16 B each) a call
// needs in one half of the sentinel region. One-shot (Allreduce, Allgather): a slot per rank;
// two-shot: the reduce-scatter and the all-gather areas, a part per rank each; Bcast: the message.
constexpr int kSentinelChunksPerThread = 4;  // sentinel::kChunksPerThread: a thread's chunks per round
inline size_t sentinel_oneshot_chunks(size_t bytes, int nranks) {
  return size_t(nranks) * ((bytes + kChunkBytes - 1) / kChunkBytes);
}
inline size_t sentinel_twoshot_chunks(size_t bytes, int nranks) {
  const size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  return 2 * size_t(nranks) * ((chunks + nranks - 1) / nranks);
}

// One launcher per algorithm, each dispatching on (dtype, op); defined in its kernel's file.
cudaError_t launch_allreduce_oneshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
cudaError_t launch_allreduce_oneshot_small(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
cudaError_t launch_allreduce_twoshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
// c: the LL128 region's DevComm (NativeComm::dev_of); launched only where the torn-line probe agreed.
cudaError_t launch_allreduce_oneshot_ll128(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
cudaError_t launch_allreduce_twoshot_ll128(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
cudaError_t launch_allgather_oneshot(const DevComm& c, const CollectiveArgs& a);
cudaError_t launch_allgather_oneshot_small(const DevComm& c, const CollectiveArgs& a);
cudaError_t launch_bcast_oneshot(const DevComm& c, const CollectiveArgs& a);
cudaError_t launch_bcast_oneshot_small(const DevComm& c, const CollectiveArgs& a);
cudaError_t launch_reduce_oneshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
cudaError_t launch_reduce_scatter_oneshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
cudaError_t launch_reduce_oneshot_small(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
cudaError_t launch_reduce_scatter_oneshot_small(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
// The sentinel protocol's kernels: `c` addresses the sentinel region (NativeComm::dev_of).
cudaError_t launch_allreduce_oneshot_sentinel(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
cudaError_t launch_allreduce_twoshot_sentinel(const DevComm& c, DType t, Op op, const CollectiveArgs& a);
cudaError_t launch_allgather_oneshot_sentinel(const DevComm& c, const CollectiveArgs& a);
cudaError_t launch_bcast_oneshot_sentinel(const DevComm& c, const CollectiveArgs& a);

namespace kernels {
constexpr int kSmallMode = 0;  // the LL mode of the small-message kernels: every communicator not forced to another (ll_line.cuh)
}  // namespace kernels

}  // namespace hpcolls
