// One-shot AllReduce over LL128 tiles (ll128_line.cuh, ll128_tile.cuh): every rank stores each
// tile of its input (30 chunks, read straight from the send buffer) into slot `rank` of every
// peer's LL128 region, then reduces the N slots of its own region in rank order 0..N-1 (its own
// contribution from registers) into the receive buffer: one remote-store latency, bitwise the same
// on every rank, as oneshot.cuh over LL lines. A warp per tile, grid-stride over the tiles, so the
// warp-collective stores, polls and shuffles are always the whole warp's.
//
// In place: a lane reads its chunk of the send buffer before it stores the reduced chunk, and no
// peer reads our buffers. Double buffering by epoch parity, as every LL kernel (call_state.cuh).
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/ll128_tile.cuh"
#include "hpcolls/payload.cuh"

namespace hpcolls::kernels {

template <typename T, Op OP>
__global__ void allreduce_oneshot_ll128(DevComm c, const char* send, char* recv, uint32_t bytes, bool vec_ok) {
  constexpr size_t kUnit = Unit<T>::value;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  CallState<0> call(c, Algo::OneShot);
  const uint32_t nranks = c.nranks, rank = c.rank;
  const uint32_t tiles = ll128_tiles_of(bytes);
  const uint32_t slot_lines = tiles * kLL128TileLines;
  const uint32_t lane = warp_lane();
  const uint32_t first = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const uint32_t stride = gridDim.x * blockDim.x / 32;
  const LL128Line* own = ll128_half(call, c, int(rank));
  const bool carries = lane < kLL128TileChunks;  // lane c < 30 carries chunk c of a tile
  bool ok = __all_sync(kFullWarp, !call.broken());
  for (uint32_t t = first; ok && t < tiles; t += stride) {
    const uint32_t chunk = t * kLL128TileChunks + lane;
    const uint4 mine = carries ? load_chunk<kUnit>(send, chunk, bytes, vec_ok) : make_uint4(0, 0, 0, 0);
    int peer = int(rank);
#pragma unroll 1
    for (uint32_t k = 1; k < nranks; ++k) {  // from the next rank up, so that ranks do not all hit rank 0 first
      peer = peer + 1 == int(nranks) ? 0 : peer + 1;
      send_tile(call, ll128_half(call, c, peer) + rank * slot_lines + t * kLL128TileLines, mine);
    }
    uint4 acc;
    ok = reduce_tile_in_rank_order<T, OP>(call, c, own + t * kLL128TileLines, slot_lines, mine, acc);
    if (ok && carries) store_chunk<kUnit>(recv, chunk, bytes, vec_ok, acc);
  }
  call.finish();
}

inline cudaError_t launch_oneshot_ll128(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return launch_allreduce_kernel<0>(c, t, op, a, [](auto type_tag, auto op_tag) {
    return &allreduce_oneshot_ll128<decltype(type_tag), decltype(op_tag)::value>;
  });
}

}  // namespace hpcolls::kernels
