// One-shot LL Allgather, launched from the host: the steps of allgather/oneshot_steps.cuh (which
// has the protocol and the in-place rule) over the whole grid.
#pragma once
#include "hpcolls/allgather/oneshot_steps.cuh"
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"

namespace hpcolls::kernels {

// bytes: one rank's block; stride: bytes from one block of the receive buffer to the next
// (bytes for a whole Allgather, more for a piece of one). vec_ok: send, recv and stride all
// 16-byte aligned.
template <int kMode>
__global__ void allgather_oneshot(DevComm c, const char* send, char* recv, uint32_t bytes, uint32_t stride,
                                  bool vec_ok) {
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t step = gridDim.x * blockDim.x;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  if (c.nranks == 1) return allgather_alone(c, send, recv, bytes, stride, vec_ok, first, step);
  CallState<kMode> call(c, Algo::OneShot, Collective::Allgather);
  allgather_oneshot_steps(call, c, send, recv, bytes, stride, vec_ok, first, step);
  call.finish();
}

template <int kMode>
cudaError_t launch_allgather_oneshot(const DevComm& c, const CollectiveArgs& a) {
  if (c.ll_mode != kMode) return cudaErrorInvalidValue;
  return launch_kernel(a, &allgather_oneshot<kMode>, c, static_cast<const char*>(a.send), static_cast<char*>(a.recv),
                       uint32_t(a.bytes), uint32_t(a.stride), a.vec_ok);
}

}  // namespace hpcolls::kernels
