// Programmatic dependent launch (Hopper and later): a collective kernel is launched with
// cudaLaunchAttributeProgrammaticStreamSerialization, so the GPU may start it while the kernel
// before it on the stream is still running or draining, instead of after a full launch gap. Such
// a kernel must wait_for_previous_kernel() before it touches global memory: only then is every
// write of the previous kernel (the user's send data, the epoch our previous call advanced)
// visible, and every read of it (of what we are about to overwrite) done. Each collective kernel
// then lets the next one start early, since the next one waits anyway — only after its own wait,
// so that at most one call per stream sits launched ahead: triggering first let a whole queue of
// calls launch one after another, and one bench run at 4 ranks on one GPU (MPS) then timed out
// after ~85,000 calls (docs/PERFORMANCE.md). With the trigger after the wait, the GPU suite at 1, 2
// and 4 ranks and the 4-rank bench ran clean, and a small call took 0.4-1.1 µs less device time.
//
// Not where ranks share the GPU (MPS): whatever kernel comes next on the stream may be launched as
// a dependent — cuBLAS's and CUB's are, on compute capability 9.0 — and its blocks then hold SM
// slots, waiting for ours to end, while ours waits on peers whose own collective kernels need
// those slots to start (docs/PERFORMANCE.md#early-start: the solver's time-outs this caused).
// With one rank per GPU nothing else competes for the SMs, and a kernel lets the next one start
// only once all of its own blocks are resident and past their wait.
//
// On devices before compute capability 9.0 these are no-ops and the host launches without the
// attribute (NativeComm).
#pragma once
#include <cuda_runtime.h>

namespace hpcolls {

// The launch attribute that lets the GPU start a kernel before the one before it on the stream ends.
inline cudaLaunchAttribute dependent_launch_attribute() {
  cudaLaunchAttribute a;
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}

// allowed: the communicator's next_may_start_early (0 where ranks share the GPU).
__device__ inline void allow_next_kernel_to_launch(bool allowed) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (allowed) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ inline void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace hpcolls
