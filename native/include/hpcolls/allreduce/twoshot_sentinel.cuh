// Two-shot AllReduce on the sentinel protocol (sentinel.cuh): reduce-scatter, then all-gather,
// as the LL two-shot (allreduce/twoshot.cuh) with every store payload only.
//
// The message's chunks are cut into N contiguous parts; rank j owns part j. Phase 1 pushes every
// chunk of part j (j != rank) into slot `rank` of rank j's reduce-scatter area (chunk
// rank * part + offset in the part). Phase 2 reduces our own part over the N slots strictly in
// rank order, stores it to the receive buffer and pushes it into slot `rank` of every peer's
// all-gather area (after the N reduce-scatter slots). Phase 3 receives the other parts from
// their owners. Each part is reduced once, by its owner, in rank order: every rank gets the same
// bits, and the LL two-shot's.
//
// The frame around the algorithm (the dependent-launch wait, a lone rank's copy, the call's state
// and the epoch's advance) is the one-shot kernel's too: sentinel::run_allreduce
// (sentinel_kernel.cuh).
//
// In place: thread t handles the chunks i = t mod the grid's threads in every phase; our own part
// is read and written only in phase 2, by that thread; chunk i of a peer's part is read in
// phase 1 and written in phase 3 only after its owner's reduced value arrived, which the owner
// could send only after receiving our phase-1 push of it.
#pragma once
#include "hpcolls/call_state.cuh"
#include "hpcolls/reduce_ops.cuh"
#include "hpcolls/sentinel.cuh"
#include "hpcolls/sentinel_kernel.cuh"

namespace hpcolls::kernels {

template <typename T, Op OP>
__global__ void allreduce_twoshot_sentinel(DevComm c, const char* send, char* recv, uint32_t bytes, bool vec_ok) {
  // The algorithm, inside sentinel::run_allreduce's frame; captures and locals as in the one-shot
  // kernel, for the same reason (allreduce/oneshot_sentinel.cuh).
  const auto two_shot = [&c, send, recv, bytes, vec_ok](CallState<0>& call, const sentinel::ChunkGrid& grid) {
    const uint32_t nranks = c.nranks, rank = c.rank;
    const uint32_t chunks = grid.chunks, first = grid.first, stride = grid.stride;
    constexpr size_t kUnit = Unit<T>::value;
    constexpr int kU = sentinel::kChunksPerThread;
    const uint32_t part = (chunks + nranks - 1) / nranks;
    const uint32_t gather = nranks * part;  // the all-gather area, after the reduce-scatter one
    const uint32_t own_begin = rank * part;
    const uint32_t own_end = min(chunks, own_begin + part);
    const sentinel::Area own = sentinel::area(call, c, c.rank);
    bool ok = !call.broken();

    // Phase 1: reduce-scatter pushes.
    for (uint32_t i = first; ok && i < chunks; i += stride) {
      const uint32_t owner = i / part;
      if (owner == rank) continue;
      sentinel::send(sentinel::area(call, c, int(owner)), rank * part + (i - owner * part),
                     load_chunk<kUnit>(send, i, bytes, vec_ok), call.epoch());
    }
    // Phase 2: our part, reduced in rank order, kept and pushed to every peer.
    for (uint32_t base = own_begin + first; ok && base < own_end; base += kU * stride) {
      uint32_t valid = 0, offset[kU];
      uint4 mine[kU], acc[kU] = {};
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t i = base + u * stride;
        offset[u] = i - own_begin;
        if (i < own_end) valid |= 1u << u;
        mine[u] = i < own_end ? load_chunk<kUnit>(send, i, bytes, vec_ok) : uint4{};
      }
      ok = sentinel::reduce_in_rank_order<T, OP>(call, c, own, [part](int q) { return uint32_t(q) * part; }, offset,
                                                 valid, mine, acc);
      if (!ok) break;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (!(valid >> u & 1)) continue;
        const uint32_t i = base + u * stride;
        store_chunk<kUnit>(recv, i, bytes, vec_ok, acc[u]);
        sentinel::push_to_peers(call, c, gather + rank * part + (i - own_begin), acc[u]);
      }
    }
    // Phase 3: the other parts, from their owners.
    for (uint32_t base = first; ok && base < chunks; base += kU * stride) {
      uint32_t valid = 0, index[kU], owner[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint32_t i = base + u * stride;
        owner[u] = i < chunks ? i / part : rank;
        if (owner[u] != rank) valid |= 1u << u;
        index[u] = gather + owner[u] * part + (i - owner[u] * part);
      }
      if (valid == 0) continue;
      uint4 got[kU] = {};
      ok = sentinel::receive(call, own, index, valid, got,
                            [&](int u) { return int((base + uint32_t(u) * stride) / part); });
      if (!ok) break;
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (valid >> u & 1) store_chunk<kUnit>(recv, base + u * stride, bytes, vec_ok, got[u]);
    }
  };
  sentinel::run_allreduce<T>(c, send, recv, bytes, vec_ok, Algo::TwoShot, two_shot);
}

}  // namespace hpcolls::kernels
