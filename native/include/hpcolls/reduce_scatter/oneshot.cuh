// One-shot LL Reduce_scatter (with counts; Reduce_scatter_block is equal counts): every rank
// pushes block j of its input, read straight from the user's send buffer, into slot `rank` of
// rank j's data region; rank j reduces its N slots strictly in rank order (reduce_in_rank_order,
// its own block taken from registers) into its receive buffer. One remote-store latency, no
// barrier; block j's result is the one AllReduce gives for those elements. Reduce runs this kernel
// too, as a Reduce_scatter of the root's block only (native/hpcolls/reduce_oneshot.cpp).
//
// Every rank with a non-empty block receives from every peer, as in AllReduce. A rank whose
// block is empty would receive nothing, so each peer stores a handshake line into its half
// instead, and it awaits them at the end of the call (handshake.cuh has the argument).
//
// In place (MPI_IN_PLACE: the input is the receive buffer, the result lands at its start): the
// thread of chunk i pushes chunk i of every peer's block, loads chunk i of its own, and only then
// stores chunk i of the result, and the result's chunk i covers no other bytes than block 0's
// chunk i when no block is larger than block 0 (NativeComm::reduce_scatter declines the others).
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/handshake.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/rank_order.cuh"

namespace hpcolls::kernels {

// b: each rank's block of the send buffer. slot_lines: lines per slot, for the largest block.
// send_vec, recv_vec: the buffers 16-byte aligned (a block moves whole chunks as vectors where
// its start is aligned too). what: Reduce_scatter or Reduce, for a time-out's record. Thread
// t < nranks also carries the handshake with rank t.
template <typename T, Op OP, int kMode>
__global__ void reduce_scatter_oneshot(DevComm c, const char* send, char* recv, BlockLayout b, uint32_t slot_lines,
                                       bool send_vec, bool recv_vec, Collective what) {
  constexpr size_t kUnit = Unit<T>::value;
  const uint32_t largest = slot_lines / uint32_t(kLinesPerChunk);  // chunks of the largest block
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t step = gridDim.x * blockDim.x;
  const auto chunks_of = [&](int q) { return (b.bytes[q] + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes); };
  const auto block_vec = [&](int q) { return send_vec && b.offset[q] % uint32_t(kChunkBytes) == 0; };
  const auto block_chunk = [&](int q, uint32_t i) {
    return load_chunk<kUnit>(send + b.offset[q], i, b.bytes[q], block_vec(q));
  };
  const uint32_t own_chunks = chunks_of(c.rank);
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);

  if (c.nranks == 1) {  // alone, the result is block 0: a copy, no scratch and no epoch
    for (uint32_t i = first; send != recv && i < own_chunks; i += step)
      store_chunk<kUnit>(recv, i, b.bytes[0], recv_vec, block_chunk(0, i));
    return;
  }

  CallState<kMode> call(c, Algo::OneShot, what);
  const int peer = int(first);  // this thread's handshake partner, if first < nranks
  const bool partner = first < uint32_t(c.nranks) && peer != c.rank;
  bool ok = !call.broken();
  if (ok && partner && b.bytes[peer] == 0) send_handshake(call, c, peer);
  const LLLine* const slots = call.half(c.rank) + kHandshakeLines;
  const uint32_t my_slot = uint32_t(kHandshakeLines) + uint32_t(c.rank) * slot_lines;
  for (uint32_t i = first; ok && i < largest; i += step) {
    const uint32_t line = i * uint32_t(kLinesPerChunk);
    int q = c.rank;
#pragma unroll 1  // the rank count is a run-time value; from the next rank up, as push_to_peers
    for (int k = 1; k < c.nranks; ++k) {
      q = q + 1 == c.nranks ? 0 : q + 1;
      if (i < chunks_of(q)) call.send_chunk(call.half(q) + my_slot + line, block_chunk(q, i));
    }
    if (i >= own_chunks) continue;
    uint4 acc;
    ok = reduce_in_rank_order<T, OP>(call, c, slots, slot_lines, line, block_chunk(c.rank, i), acc);
    if (ok) store_chunk<kUnit>(recv, i, b.bytes[c.rank], recv_vec, acc);
  }
  if (ok && partner && own_chunks == 0) await_handshake(call, c, peer);
  call.finish();
}

template <int kMode>
cudaError_t launch_reduce_scatter_oneshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  if (c.ll_mode != kMode || a.layout == nullptr) return cudaErrorInvalidValue;
  const uint32_t slot_lines = uint32_t((a.bytes + kChunkBytes - 1) / kChunkBytes * kLinesPerChunk);
  const bool send_vec = reinterpret_cast<uintptr_t>(a.send) % kChunkBytes == 0;
  const bool recv_vec = reinterpret_cast<uintptr_t>(a.recv) % kChunkBytes == 0;
  return dispatch(t, op, [&](auto type_tag, auto op_tag) {
    return launch_kernel(a, &reduce_scatter_oneshot<decltype(type_tag), decltype(op_tag)::value, kMode>, c,
                         static_cast<const char*>(a.send), static_cast<char*>(a.recv), *a.layout, slot_lines,
                         send_vec, recv_vec, a.collective);
  });
}

}  // namespace hpcolls::kernels
