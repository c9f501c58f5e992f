// One-shot LL Reduce: every non-root pushes its input, read straight from the user's send buffer,
// into slot `rank` of the root's data region; the root reduces the N slots strictly in rank order
// (reduce_in_rank_order, as two-shot AllReduce reduces its part, its own input taken from
// registers) into its receive buffer. One remote-store latency, no barrier; the result is the
// one AllReduce gives for the same inputs.
//
// The mirror of Bcast (handshake.cuh has the argument): the root receives from every rank, the
// non-roots from none, so the root stores a handshake line into every non-root's half and every
// non-root into every other non-root's, on entry; a non-root awaits a handshake line from each
// peer at the end of the call.
//
// In place (MPI_IN_PLACE at the root: its input is the receive buffer): chunk i is loaded and
// stored by one thread, the load first. A non-root's receive buffer is not touched.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/handshake.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/rank_order.cuh"

namespace hpcolls::kernels {

// vec_ok: send (and recv at the root) 16-byte aligned. Thread t < nranks also carries the
// handshake with rank t.
template <typename T, Op OP, int kMode>
__global__ void reduce_oneshot(DevComm c, const char* send, char* recv, uint32_t bytes, int root, bool vec_ok) {
  constexpr size_t kUnit = Unit<T>::value;
  const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t step = gridDim.x * blockDim.x;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch();

  if (c.nranks == 1) {  // alone, the result is the input: a copy, no scratch and no epoch
    for (uint32_t i = first; send != recv && i < chunks; i += step)
      store_chunk<kUnit>(recv, i, bytes, vec_ok, load_chunk<kUnit>(send, i, bytes, vec_ok));
    return;
  }

  CallState<kMode> call(c, Algo::OneShot, Collective::Reduce);
  const bool is_root = c.rank == root;
  const uint32_t slot_lines = chunks * uint32_t(kLinesPerChunk);
  const int peer = int(first);  // this thread's handshake partner, if first < nranks
  const bool partner = first < uint32_t(c.nranks) && peer != c.rank;
  bool ok = !call.broken();
  if (ok && partner && (is_root || peer != root)) send_handshake(call, c, peer);
  if (!is_root) {
    LLLine* const to_root = call.half(root) + kHandshakeLines + uint32_t(c.rank) * slot_lines;
    for (uint32_t i = first; ok && i < chunks; i += step)
      call.send_chunk(to_root + i * uint32_t(kLinesPerChunk), load_chunk<kUnit>(send, i, bytes, vec_ok));
    if (ok && partner) await_handshake(call, c, peer);
  } else {
    const LLLine* const slots = call.half(c.rank) + kHandshakeLines;
    for (uint32_t i = first; ok && i < chunks; i += step) {
      uint4 acc;
      ok = reduce_in_rank_order<T, OP>(call, c, slots, slot_lines, i * uint32_t(kLinesPerChunk),
                                       load_chunk<kUnit>(send, i, bytes, vec_ok), acc);
      if (ok) store_chunk<kUnit>(recv, i, bytes, vec_ok, acc);
    }
  }
  call.finish();
}

template <int kMode>
cudaError_t launch_reduce_oneshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  if (c.ll_mode != kMode) return cudaErrorInvalidValue;
  return dispatch(t, op, [&](auto type_tag, auto op_tag) {
    return launch_kernel(a, &reduce_oneshot<decltype(type_tag), decltype(op_tag)::value, kMode>, c,
                         static_cast<const char*>(a.send), static_cast<char*>(a.recv), uint32_t(a.bytes), a.root,
                         a.vec_ok);
  });
}

}  // namespace hpcolls::kernels
