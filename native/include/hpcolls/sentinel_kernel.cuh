// What the sentinel kernels (allreduce/oneshot_sentinel.cuh, allreduce/twoshot_sentinel.cuh,
// allgather/oneshot_sentinel.cuh, bcast/oneshot_sentinel.cuh) share besides the protocol itself
// (sentinel.cuh): a thread's walk over the message's chunks, and the frame of the two AllReduce
// kernels.
#pragma once
#include <cstdint>

#include "hpcolls/call_state.cuh"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/payload.cuh"
#include "hpcolls/reduce_ops.cuh"
#include "hpcolls/types.h"

namespace hpcolls::sentinel {

// This thread's grid-stride walk over the 16-byte chunks of a message of `bytes`: it takes chunks
// first, first + stride, ... below chunks. No memory access: a kernel may form it before its
// dependent-launch wait.
struct ChunkGrid {
  uint32_t chunks;  // the message's chunks, the last one partial where the bytes end inside it
  uint32_t first;   // this thread's index in the grid
  uint32_t stride;  // the grid's thread count

  __device__ __forceinline__ explicit ChunkGrid(uint32_t bytes)
      : chunks((bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes)),
        first(blockIdx.x * blockDim.x + threadIdx.x),
        stride(gridDim.x * blockDim.x) {}
};

// The frame of both sentinel AllReduce kernels, one-shot and two-shot alike: the wait for the
// previous kernel's memory before any global memory access, and the early launch of the next one
// (dependent_launch.cuh); alone, the sum is the input, so the whole call is a copy, with no scratch
// and no epoch; otherwise this call's state, the algorithm, body(call, grid) with grid this
// thread's ChunkGrid, and the epoch's advance at the end (CallState::finish).
template <typename T, typename Body>
__device__ __forceinline__ void run_allreduce(const DevComm& c, const char* send, char* recv, uint32_t bytes,
                                              bool vec_ok, Algo algo, Body body) {
  constexpr size_t kUnit = Unit<T>::value;
  const ChunkGrid grid(bytes);
  wait_for_previous_kernel();
  allow_next_kernel_to_launch(c.next_may_start_early);
  if (c.nranks == 1) {
    for (uint32_t i = grid.first; i < grid.chunks; i += grid.stride)
      store_chunk<kUnit>(recv, i, bytes, vec_ok, load_chunk<kUnit>(send, i, bytes, vec_ok));
    return;
  }
  CallState<0> call(c, algo);
  body(call, grid);
  call.finish();
}

}  // namespace hpcolls::sentinel
