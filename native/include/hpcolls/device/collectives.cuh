// hpcolls' device API: collectives a CUDA kernel performs itself, on a communicator that host
// code also calls collectives on (docs/DEVICE_API.md has the rules and a complete example).
//
//   #include <hpcolls/device/collectives.cuh>            // -I <hpcolls>/native/include
//   __global__ void step(hpcolls_device_comm_t comm, double* x, int n) {
//     ... compute x ...
//     if (hpcolls::device::allreduce<hpcolls::Op::Sum>(comm, x, x, n) != hpcolls::device::Status::Ok) return;
//     ... continue with the sum of every rank's x ...
//   }
//
// Scope: an operation is called by every thread of one block, as __syncthreads() is (allreduce_grid:
// of every block of a cooperative launch, as this_grid().sync() is); it begins
// with a block barrier (so the block's writes to the send buffer are seen) and ends with one (so
// every thread sees the result). On a communicator, operations and host-launched collectives form
// one sequence that every rank must issue in the same order (MPI's rule): within a kernel, one
// block at a time calls them (typically block 0, or a one-block kernel), and the kernel is ordered
// with the communicator's host calls by its stream (the same stream, or events).
//
// Guarantees, the host path's: no barrier with the peers (a receive of call e's data is what lets
// a rank send call e+1, the epoch living on the device); reductions in rank order 0..N-1, bitwise
// the same on every rank and as the host path's; every wait bounded by the communicator's
// time-out, after which the error record names rank, peer, collective and epoch and the host's
// next call on the communicator raises CollectiveTimeout (the operation returns Status::Broken).
// Works in CUDA graphs: nothing here reads host state.
//
// Protocol: LL (16-byte lines, half flag), one-shot. Buffers: any device memory the kernel can
// address (global or shared), any alignment of the element type; 16-byte aligned buffers move as
// vectors. Sizes: hpcolls_device_*_max_bytes(&comm) per rank (hpcolls/device/comm.h).
//
// docs/DEVICE_API.md says what ran on which GPU.
#pragma once
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "hpcolls/allgather/oneshot_steps.cuh"
#include "hpcolls/allreduce/oneshot_steps.cuh"
#include "hpcolls/bcast/oneshot_steps.cuh"
#include "hpcolls/call_state.cuh"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/device/comm.h"
#include "hpcolls/payload.cuh"
#include "hpcolls/reduce_ops.cuh"
#include "hpcolls/types.h"

namespace hpcolls::device {

// Comm is hpcolls_device_comm_t (types.h); Op is hpcolls::Op (Sum, Prod, Min, Max, BAnd, BOr,
// BXor, LAnd, LOr, LXor), with MPI's meaning per type (types.h, op_supported).
using hpcolls::Op;

enum class Status : int {
  Ok = HPCOLLS_DEVICE_OK,
  Broken = HPCOLLS_DEVICE_BROKEN,  // timed out here or earlier: the host raises CollectiveTimeout
  TooLarge = HPCOLLS_DEVICE_TOO_LARGE,
  EpochsExhausted = HPCOLLS_DEVICE_EPOCHS_EXHAUSTED,
  BadRoot = HPCOLLS_DEVICE_BAD_ROOT,
  NotCooperative = HPCOLLS_DEVICE_NOT_COOPERATIVE,  // allreduce_grid outside a cooperative launch
};

// The element types allreduce takes, each with the type it reduces as and its hpcolls DType:
// float, double, __half, __nv_bfloat16, float2 / cuFloatComplex / hpcolls::cfloat (complex64),
// double2 / cuDoubleComplex / hpcolls::cdouble (complex128), every 8- to 64-bit integer, bool.
template <typename T, typename = void> struct Element { static constexpr bool known = false; };
template <typename T, typename R, DType kType> struct ElementOf {
  static constexpr bool known = true;
  using type = R;  // what reduce_ops.cuh reduces
  static constexpr DType dtype = kType;
};
template <> struct Element<float> : ElementOf<float, float, DType::F32> {};
template <> struct Element<double> : ElementOf<double, double, DType::F64> {};
template <> struct Element<__half> : ElementOf<__half, __half, DType::F16> {};
template <> struct Element<__nv_bfloat16> : ElementOf<__nv_bfloat16, __nv_bfloat16, DType::BF16> {};
template <> struct Element<cfloat> : ElementOf<cfloat, cfloat, DType::C64> {};
template <> struct Element<cdouble> : ElementOf<cdouble, cdouble, DType::C128> {};
template <> struct Element<float2> : ElementOf<float2, cfloat, DType::C64> {};
template <> struct Element<double2> : ElementOf<double2, cdouble, DType::C128> {};
template <> struct Element<bool> : ElementOf<bool, uint8_t, DType::Bool> {};  // 0 or 1 in a byte
// Integers by width and sign, so that long, long long and char all find theirs.
template <size_t kBytes, bool kSigned> struct IntegerOf;
template <> struct IntegerOf<1, true> : ElementOf<int8_t, int8_t, DType::I8> {};
template <> struct IntegerOf<1, false> : ElementOf<uint8_t, uint8_t, DType::U8> {};
template <> struct IntegerOf<2, true> : ElementOf<int16_t, int16_t, DType::I16> {};
template <> struct IntegerOf<2, false> : ElementOf<uint16_t, uint16_t, DType::U16> {};
template <> struct IntegerOf<4, true> : ElementOf<int32_t, int32_t, DType::I32> {};
template <> struct IntegerOf<4, false> : ElementOf<uint32_t, uint32_t, DType::U32> {};
template <> struct IntegerOf<8, true> : ElementOf<int64_t, int64_t, DType::I64> {};
template <> struct IntegerOf<8, false> : ElementOf<uint64_t, uint64_t, DType::U64> {};
template <typename T>
struct Element<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>>
    : IntegerOf<sizeof(T), std::is_signed_v<T>> {};

// Whether allreduce takes OP on T (types.h's op_supported, as the host path decides), evaluated
// outside device code.
template <typename T, Op OP> constexpr bool kReduces = op_supported(Element<T>::dtype, OP);

namespace detail {

// The device API runs the default LL mode, the only one a default build has (ll_line.cuh): a
// communicator forced to another (diagnosis) gives no device_comm.
constexpr int kMode = 0;

// This thread's index in its block and the block's size, for blocks of any shape.
__device__ inline uint32_t thread_in_block() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ inline uint32_t threads_in_block() { return blockDim.x * blockDim.y * blockDim.z; }

// One operation of a block on a communicator of two ranks or more: the epoch read, its advance,
// steps(call, first, step) -> false on a time-out, the closing barrier; the status, block-uniform.
template <typename Steps>
__device__ inline Status run(const Comm& c, Collective collective, Steps steps) {
  CallState<kMode> call(c, Algo::OneShot, collective);
  // Every rank is at the same epoch, so every rank refuses the same call (the host path refuses
  // at the same count: NativeComm::launch_call). Flag 0 must never be live again.
  if (call.epoch() == UINT32_MAX) return Status::EpochsExhausted;
  // Every thread has read the epoch: advance it now (nothing reads it after CallState's
  // constructor). The closing barrier orders this store before the next operation's read; a
  // kernel boundary, before the next host-launched call's.
  __syncthreads();
  if (thread_in_block() == 0) call.advance_epoch();
  const bool ok = steps(call, thread_in_block(), threads_in_block());
  return __syncthreads_or(!ok) ? Status::Broken : Status::Ok;
}

__device__ inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Opens an operation: a kernel launched as a programmatic dependent of the one before it
// (dependent_launch.cuh) first waits for that kernel's memory, the epoch it advanced included
// (griddepcontrol.wait returns at once in a kernel launched without the attribute); then the block
// barrier that makes the block's writes to the send buffer seen by every thread.
__device__ inline void open_operation() {
  wait_for_previous_kernel();
  __syncthreads();
}

}  // namespace detail

namespace detail {

// One allreduce's message, as both scopes check and move it: T reduces as R (Element), its bytes
// within the per-rank limit or not, both buffers 16-byte aligned or not.
template <Op OP, typename T>
struct AllreduceMessage {
  static_assert(Element<T>::known, "hpcolls::device::allreduce: not an element type hpcolls reduces (Element)");
  static_assert(kReduces<T, OP>, "hpcolls::device::allreduce: MPI does not define this op on this type");
  using R = typename Element<T>::type;
  static_assert(sizeof(R) == sizeof(T), "an element reduces as a type of its own size");
  static constexpr size_t kUnit = Unit<R>::value;

  __device__ AllreduceMessage(const Comm& c, const T* send, T* recv, size_t count)
      : in(reinterpret_cast<const char*>(send)), out(reinterpret_cast<char*>(recv)),
        too_large(uint64_t(count) * sizeof(T) > hpcolls_device_allreduce_max_bytes(&c)),
        bytes(uint32_t(count * sizeof(T))), vec_ok(aligned16(send) && aligned16(recv)) {}

  // Alone (one rank): a copy by the threads first, first + step, ...; no scratch, no epoch.
  __device__ void copy(uint32_t first, uint32_t step) const {
    const uint32_t chunks = (bytes + uint32_t(kChunkBytes) - 1) / uint32_t(kChunkBytes);
    for (uint32_t i = first; in != out && i < chunks; i += step)
      store_chunk<kUnit>(out, i, bytes, vec_ok, load_chunk<kUnit>(in, i, bytes, vec_ok));
  }

  __device__ bool steps(CallState<kMode>& call, const Comm& c, uint32_t first, uint32_t step) const {
    return allreduce_oneshot_steps<R, OP>(call, c, in, out, bytes, vec_ok, first, step);
  }

  const char* in;
  char* out;
  bool too_large;
  uint32_t bytes;  // valid where not too_large
  bool vec_ok;
};

}  // namespace detail

// recv[i] = send[0][i] OP send[1][i] OP ... OP send[N-1][i] (send[q]: rank q's send), combined in
// rank order, for i < count, on every rank. In place when send == recv. Every rank passes the
// same count and OP.
template <Op OP, typename T>
__device__ Status allreduce(const Comm& c, const T* send, T* recv, size_t count) {
  const detail::AllreduceMessage<OP, T> m(c, send, recv, count);
  if (m.too_large) return Status::TooLarge;
  detail::open_operation();
  if (c.nranks == 1) {  // no peer waits on this rank
    m.copy(detail::thread_in_block(), detail::threads_in_block());
    __syncthreads();
    return Status::Ok;
  }
  return detail::run(c, Collective::Allreduce, [&](CallState<detail::kMode>& call, uint32_t first, uint32_t step) {
    return m.steps(call, c, first, step);
  });
}

// allreduce at grid scope: every thread of every block of a kernel launched cooperatively
// (cudaLaunchCooperativeKernel; cupy: a RawModule made with enable_cooperative_groups=True) calls it, as it would
// this_grid().sync(), and the message's chunks are spread over the whole grid instead of one
// block. The same result, bits and guarantees as allreduce; the status is the same on every
// thread of the grid. It begins with a grid barrier (every block's writes to the send buffer are
// seen, and the operation before it ended on every block) and ends with one (every block sees the
// result). Ranks sharing a GPU (MPS) must each launch at most their share of it: a grid waits on
// its peers, whose grids need SMs to start. No grid barrier (cooperative groups' is_valid(), true
// in any launch under CUDA 13, so an ordinary launch is not caught: docs/DEVICE_API.md):
// NotCooperative, nothing moved.
template <Op OP, typename T>
__device__ Status allreduce_grid(const Comm& c, const T* send, T* recv, size_t count) {
  const detail::AllreduceMessage<OP, T> m(c, send, recv, count);
  if (m.too_large) return Status::TooLarge;
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  if (!grid.is_valid()) return Status::NotCooperative;
  const uint32_t first = uint32_t(grid.thread_rank()), step = uint32_t(grid.num_threads());
  wait_for_previous_kernel();
  grid.sync();
  if (c.nranks == 1) {
    m.copy(first, step);
    grid.sync();
    return Status::Ok;
  }
  CallState<detail::kMode> call(c, Algo::OneShot, Collective::Allreduce);
  if (call.epoch() == UINT32_MAX) return Status::EpochsExhausted;  // every thread read the same epoch
  m.steps(call, c, first, step);
  // Every thread's steps (and epoch read) are done and its stores seen by the grid: a time-out
  // anywhere has set the counters' error word, which every thread now reads the same. The next
  // operation's opening barrier orders the epoch's advance before its read.
  grid.sync();
  const bool broken = static_cast<const volatile DeviceCounters*>(c.counters)->error != 0;
  if (first == 0) call.advance_epoch();
  return broken ? Status::Broken : Status::Ok;
}

// buf[0, count) of rank `root` into buf on every other rank; any trivially copyable T (bytes move
// as they are). Every rank passes the same count and root.
template <typename T>
__device__ Status broadcast(const Comm& c, T* buf, size_t count, int root) {
  static_assert(std::is_trivially_copyable_v<T>, "hpcolls::device::broadcast moves bytes");
  const uint64_t bytes = uint64_t(count) * sizeof(T);
  if (root < 0 || root >= c.nranks) return Status::BadRoot;
  if (bytes > hpcolls_device_broadcast_max_bytes(&c)) return Status::TooLarge;
  char* const data = reinterpret_cast<char*>(buf);
  const bool vec_ok = detail::aligned16(buf);
  detail::open_operation();
  if (c.nranks == 1) return Status::Ok;  // nothing moves, no epoch
  return detail::run(c, Collective::Bcast, [&](CallState<detail::kMode>& call, uint32_t first, uint32_t step) {
    return bcast_oneshot_steps(call, c, data, uint32_t(bytes), root, vec_ok, first, step);
  });
}

// Every rank's send[0, count) into recv[q * count, (q + 1) * count) of every rank, q its rank; any
// trivially copyable T. In place when send == recv + rank * count. Every rank passes the same count.
template <typename T>
__device__ Status allgather(const Comm& c, const T* send, T* recv, size_t count) {
  static_assert(std::is_trivially_copyable_v<T>, "hpcolls::device::allgather moves bytes");
  const uint64_t bytes = uint64_t(count) * sizeof(T);
  if (bytes > hpcolls_device_allgather_max_bytes(&c)) return Status::TooLarge;
  const char* const in = reinterpret_cast<const char*>(send);
  char* const out = reinterpret_cast<char*>(recv);
  const bool vec_ok = detail::aligned16(send) && detail::aligned16(recv) && bytes % 16 == 0;
  detail::open_operation();
  if (c.nranks == 1) {
    allgather_alone(c, in, out, uint32_t(bytes), uint32_t(bytes), vec_ok, detail::thread_in_block(),
                    detail::threads_in_block());
    __syncthreads();
    return Status::Ok;
  }
  return detail::run(c, Collective::Allgather, [&](CallState<detail::kMode>& call, uint32_t first, uint32_t step) {
    return allgather_oneshot_steps(call, c, in, out, uint32_t(bytes), uint32_t(bytes), vec_ok, first, step);
  });
}

}  // namespace hpcolls::device
