// One-shot LL Bcast, launched from the host: the steps of bcast/oneshot_steps.cuh (which has the
// protocol and its handshakes) over the whole grid.
#pragma once
#include "hpcolls/bcast/oneshot_steps.cuh"
#include "hpcolls/call_state.cuh"
#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/dispatch.cuh"

namespace hpcolls::kernels {

template <int kMode>
__global__ void bcast_oneshot(DevComm c, char* buf, uint32_t bytes, int root, bool vec_ok) {
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t step = gridDim.x * blockDim.x;
  wait_for_previous_kernel();  // before any global memory access (dependent_launch.cuh)
  allow_next_kernel_to_launch(c.next_may_start_early);
  if (c.nranks == 1) return;  // not launched alone (NativeComm::bcast): nothing moves
  CallState<kMode> call(c, Algo::OneShot, Collective::Bcast);
  bcast_oneshot_steps(call, c, buf, bytes, root, vec_ok, first, step);
  call.finish();
}

template <int kMode>
cudaError_t launch_bcast_oneshot(const DevComm& c, const CollectiveArgs& a) {
  if (c.ll_mode != kMode) return cudaErrorInvalidValue;
  return launch_kernel(a, &bcast_oneshot<kMode>, c, static_cast<char*>(a.recv), uint32_t(a.bytes), a.root, a.vec_ok);
}

}  // namespace hpcolls::kernels
