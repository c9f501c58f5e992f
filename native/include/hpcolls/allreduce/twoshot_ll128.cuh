// Two-shot AllReduce over LL128 tiles (ll128_line.cuh, ll128_tile.cuh): reduce-scatter, then
// all-gather, barrier-free, as twoshot.cuh does over LL lines, with a warp per tile of 30 chunks
// (480 payload bytes in 512 of scratch, where LL lines spend 1024 on them).
//
// The message's chunks are cut into tiles of 30; the tiles into N contiguous parts, rank j owning
// part j. Phase 1 stores every tile of part j (j != rank) into slot `rank` of rank j's
// reduce-scatter region. Phase 2 reduces our own part's tiles over the N slots in rank order 0..N-1
// (ll128_tile.cuh), writes them to the receive buffer and stores them into slot `rank` of every
// peer's all-gather region. Phase 3 copies the other parts out of our all-gather region. Each part
// is reduced once, by its owner, in rank order: every rank gets bitwise-identical results, the
// same as the LL kernels' and the host reference's.
//
// In place: our own part's chunks are read and written only in phase 2, by the same lane. A
// peer's part is read in phase 1 and written in phase 3 only after its owner's reduced tile
// arrived, which the owner could send only after receiving our phase-1 tile.
//
// Double buffering by epoch parity, as every LL kernel (call_state.cuh): call e uses half e & 1
// of the LL128 region. Every loop is over tiles a warp owns, the same on all its lanes, so the
// warp-collective stores, polls and shuffles are always called by the whole warp (the plan gives
// whole warps).
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/ll128_tile.cuh"
#include "hpcolls/payload.cuh"

namespace hpcolls::kernels {

template <typename T, Op OP>
__global__ void allreduce_twoshot_ll128(DevComm c, const char* send, char* recv, uint32_t bytes, bool vec_ok) {
  constexpr size_t kUnit = Unit<T>::value;
  constexpr uint32_t kLines = kLL128TileLines;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  CallState<0> call(c, Algo::TwoShot);
  const uint32_t nranks = c.nranks, rank = c.rank;
  const uint32_t tiles = ll128_tiles_of(bytes);
  const uint32_t part = (tiles + nranks - 1) / nranks;
  const uint32_t slot_lines = part * kLines;
  const uint32_t gather_base = nranks * slot_lines;  // all-gather region after reduce-scatter's
  const uint32_t lane = warp_lane();
  const uint32_t first = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const uint32_t stride = gridDim.x * blockDim.x / 32;
  const uint32_t own_begin = rank * part;
  const uint32_t own_end = min(tiles, own_begin + part);
  const LL128Line* own = ll128_half(call, c, int(rank));
  // Lane c < 30 carries chunk c of a tile from the user's buffers and back; lanes 30, 31 none.
  const bool carries = lane < kLL128TileChunks;
  const auto load = [&](uint32_t t) {
    return carries ? load_chunk<kUnit>(send, t * kLL128TileChunks + lane, bytes, vec_ok) : make_uint4(0, 0, 0, 0);
  };
  const auto store = [&](uint32_t t, uint4 v) {
    if (carries) store_chunk<kUnit>(recv, t * kLL128TileChunks + lane, bytes, vec_ok, v);
  };
  bool ok = __all_sync(kFullWarp, !call.broken());

  // Phase 1: reduce-scatter sends.
  for (uint32_t t = first; ok && t < tiles; t += stride) {
    const uint32_t owner = t / part;
    if (owner == rank) continue;
    const uint4 v = load(t);
    send_tile(call, ll128_half(call, c, int(owner)) + rank * slot_lines + (t - owner * part) * kLines, v);
  }
  // Phase 2: reduce our own part in rank order, keep it, and send it to every peer.
  for (uint32_t t = own_begin + first; ok && t < own_end; t += stride) {
    const uint32_t line = (t - own_begin) * kLines;
    uint4 acc;
    ok = reduce_tile_in_rank_order<T, OP>(call, c, own + line, slot_lines, load(t), acc);
    if (!ok) break;
    store(t, acc);
    int peer = int(rank);
#pragma unroll 1
    for (uint32_t k = 1; k < nranks; ++k) {  // from the next rank up, so that ranks do not all hit rank 0 first
      peer = peer + 1 == int(nranks) ? 0 : peer + 1;
      send_tile(call, ll128_half(call, c, peer) + gather_base + rank * slot_lines + line, acc);
    }
  }
  // Phase 3: all-gather receives.
  for (uint32_t t = first; ok && t < tiles; t += stride) {
    const uint32_t owner = t / part;
    if (owner == rank) continue;
    uint4 v;
    ok = receive_tile(call, own + gather_base + owner * slot_lines + (t - owner * part) * kLines, int(owner), v);
    if (ok) store(t, v);
  }
  call.finish();
}

inline cudaError_t launch_twoshot_ll128(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return launch_allreduce_kernel<0>(c, t, op, a, [](auto type_tag, auto op_tag) {
    return &allreduce_twoshot_ll128<decltype(type_tag), decltype(op_tag)::value>;
  });
}

}  // namespace hpcolls::kernels
