// sb2st's chase on the GPU: one kernel whose thread blocks are the pipeline's workers (sb2st.h).
// A block takes the next sweep from a counter in global memory; before step k of sweep s its
// thread 0 waits (bounded by %globaltimer) until sweep s-1's progress counter reaches k + 1, and
// again for k + 2 before the step's late entries are read (sb2st.h); the band is read through L2 (ld.global.cg: a line another SM wrote is never read stale from L1),
// and a step publishes its progress once a barrier has ordered every thread's stores before
// thread 0's fence. The blocks under chase (A and D) live in shared memory.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "sb2st.h"
#include "sb2st_step.cuh"

namespace solvers {
namespace {

// Layout of the device scratch (sb2st_device_work_bytes): progress[sweeps], then the sweep
// counter, then the error record {flag, sweep, step, waited-for progress}.
struct ChaseWork {
  unsigned long long* progress;
  unsigned long long* next;
  long long* error;
};

struct DeviceExec {
  __device__ int first() const { return threadIdx.x; }
  __device__ int stride() const { return blockDim.x; }
  __device__ void sync() const { __syncthreads(); }

  // The sum over the block, the same bits on every thread (lane 0 of each warp posts its warp's
  // sum, every thread adds the posts in warp order) with one barrier: a call site's scratch is
  // its own (chase_step's two sums use two), and a block passes other barriers before it sums
  // into the same scratch again, so no reader of the last posts is left.
  template <typename T>
  __device__ T sum(T x, T* scratch) const {
    for (int offset = 16; offset > 0; offset >>= 1) x += shfl_xor(x, offset);
    const int warps = (blockDim.x + 31) / 32;
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = x;
    __syncthreads();
    T total = scratch[0];
    for (int w = 1; w < warps; ++w) total += scratch[w];
    return total;
  }
};

__device__ inline unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ inline unsigned long long load_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ inline void store_release(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Thread 0 waits until sweep s-1 has finished `need` steps (sweep 0 waits for none), and gives up
// after timeout_ns or once another block has (the error record); then every thread passes a
// barrier and learns whether to go on.
__device__ bool wait_for_sweep(const ChaseWork& work, long long s, long long k, unsigned long long need,
                               unsigned long long timeout_ns, int& abandon) {
  if (threadIdx.x == 0 && s > 0) {
    const unsigned long long start = global_ns();
    // The error record is read once every 256 polls: a poll is one L2 round trip, the time the
    // release of sweep s-1 waits to be seen.
    for (unsigned polls = 1; load_acquire(&work.progress[s - 1]) < need; ++polls) {
      if ((polls % 256 == 0 && atomicAdd(reinterpret_cast<unsigned long long*>(&work.error[0]), 0ull) != 0ull) ||
          global_ns() - start > timeout_ns) {
        if (atomicCAS(reinterpret_cast<unsigned long long*>(&work.error[0]), 0ull, 1ull) == 0ull) {
          work.error[1] = s;
          work.error[2] = k;
          work.error[3] = static_cast<long long>(need);
        }
        abandon = 1;
        break;
      }
      __nanosleep(32);
    }
  }
  __syncthreads();
  return abandon == 0;
}

template <typename T, int kB>
__global__ void chase_kernel(ChaseBand<T> band, ChaseReflectors<T> out, ChaseWork work, unsigned long long timeout_ns) {
  extern __shared__ __align__(16) unsigned char shared_raw[];
  __shared__ long long sweep;
  __shared__ int abandon;
  const ChaseSpace<T> sp = carve_space(reinterpret_cast<T*>(shared_raw), band.b);
  const DeviceExec ex;
  const long long sweeps = band.n - 1;
  for (;;) {
    if (threadIdx.x == 0) {
      sweep = static_cast<long long>(atomicAdd(work.next, 1ull));
      abandon = 0;
    }
    __syncthreads();
    const long long s = sweep;
    if (s >= sweeps) return;
    const long long steps = chase_steps(band.n, band.b, s);
    const long long before = s > 0 ? chase_steps(band.n, band.b, s - 1) : 0;
    for (long long k = 0; k < steps; ++k) {
      auto done = [&](long long count) { return static_cast<unsigned long long>(count < before ? count : before); };
      if (!wait_for_sweep(work, s, k, done(k + 1), timeout_ns, abandon)) return;
      if (!chase_step<T, kB>(ex, band, out, sp, s, k,
                             [&] { return wait_for_sweep(work, s, k, done(k + 2), timeout_ns, abandon); }))
        return;
      // chase_step ends with a barrier: the block's stores to the band happen before thread 0's
      // fence, which makes them visible at GPU scope before its release of the progress.
      if (threadIdx.x == 0) {
        __threadfence();
        store_release(&work.progress[s], static_cast<unsigned long long>(k + 1));
      }
    }
    __syncthreads();  // `sweep` is rewritten by thread 0 next
  }
}

template <typename T>
size_t shared_bytes(int b) {
  return size_t(chase_space_elems(b)) * sizeof(T);
}

}  // namespace

size_t sb2st_shared_bytes(int b, ScalarType t) {
  return with_scalar(t, "sb2st", [&](auto* tag) { return shared_bytes<std::remove_pointer_t<decltype(tag)>>(b); });
}

bool sb2st_device_fits(int b, ScalarType t, int device) {
  int limit = 0;
  cuda_check(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
             "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
  return sb2st_shared_bytes(b, t) <= size_t(limit);
}

size_t sb2st_device_work_bytes(int64_t n) { return size_t(std::max<int64_t>(n, 1) + 5) * 8; }

void sb2st_device(const Sb2stArgs& args, ScalarType t, int device, void* work_ptr, cudaStream_t stream,
                  int threads_per_block, int workers, double timeout_s) {
  if (args.b < 1) throw std::invalid_argument("solvers: sb2st needs a bandwidth >= 1");
  if (threads_per_block < 32 || threads_per_block > 1024 || threads_per_block % 32)
    throw std::invalid_argument("solvers: sb2st's threads per block must be a multiple of 32 in [32, 1024]");
  const int64_t sweeps = std::max<int64_t>(args.n - 1, 0);
  if (sweeps == 0) return;
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  auto* base = static_cast<unsigned long long*>(work_ptr);
  const ChaseWork work{base, base + sweeps, reinterpret_cast<long long*>(base + sweeps + 1)};
  cuda_check(cudaMemsetAsync(work_ptr, 0, sb2st_device_work_bytes(args.n), stream), "cudaMemsetAsync(sb2st work)");
  with_scalar(t, "sb2st", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const size_t shared = shared_bytes<T>(args.b);
    // b = 64 (the GPU default) with the index arithmetic of a compile-time bandwidth.
    auto kernel = args.b == 64 ? chase_kernel<T, 64> : chase_kernel<T, 0>;
    cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)),
               "cudaFuncSetAttribute(sb2st shared memory)");
    cudaFuncAttributes attributes{};
    cuda_check(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes(sb2st)");
    if (threads_per_block > attributes.maxThreadsPerBlock)  // its registers a thread allow no more
      throw std::invalid_argument("solvers: sb2st's kernel for this dtype and bandwidth runs at most " +
                                  std::to_string(attributes.maxThreadsPerBlock) + " threads a block, not " +
                                  std::to_string(threads_per_block));
    int blocks = workers;
    if (blocks <= 0) {
      // About n / 2b sweeps are in flight at once (each starts two steps after the one before).
      // A step is issue-bound on its SM, so two blocks that share one run at half speed: one
      // block an SM while the sweeps in flight fit, more (as many as fit) only past that.
      int per_sm = 0, sms = 0;
      cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads_per_block, shared),
                 "cudaOccupancyMaxActiveBlocksPerMultiprocessor(sb2st)");
      cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SMs)");
      const int64_t in_flight = sweeps / (2 * int64_t(args.b)) + 2;
      blocks = int(std::min<int64_t>(std::max<int64_t>(1, int64_t(per_sm) * sms), std::max<int64_t>(sms, in_flight)));
    }
    blocks = int(std::min<int64_t>(blocks, sweeps));
    const ChaseBand<T> band{static_cast<T*>(args.band), args.n, 2 * int64_t(args.b), args.b};
    const ChaseReflectors<T> out{static_cast<T*>(args.v), static_cast<T*>(args.tau), args.index, args.kmax,
                                 args.group, args.height};
    const auto timeout_ns = static_cast<unsigned long long>(std::max(timeout_s, 1e-3) * 1e9);
    kernel<<<blocks, threads_per_block, shared, stream>>>(band, out, work, timeout_ns);
    cuda_check(cudaGetLastError(), "sb2st kernel launch");
  });
  long long error[4] = {0, 0, 0, 0};
  cuda_check(cudaMemcpyAsync(error, base + sweeps + 1, sizeof(error), cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync(sb2st error record)");
  cuda_check(cudaStreamSynchronize(stream), "sb2st kernel");
  if (error[0] != 0)
    throw std::runtime_error("solvers: sb2st's GPU chase stopped: sweep " + std::to_string(error[1]) + " waited over " +
                             std::to_string(timeout_s) + " s at step " + std::to_string(error[2]) +
                             " for sweep " + std::to_string(error[1] - 1) + " to finish " +
                             std::to_string(error[3]) + " steps");
}

}  // namespace solvers
