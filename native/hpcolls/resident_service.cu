// The resident kernel and its host side (hpcolls/resident_service.h).
//
// The kernel reads the data of a call through L2 into shared memory first (the stage): a kernel
// that stays resident keeps its SM's L1 across calls, and L1 is not kept coherent with stores of
// other kernels, so a plain load of a buffer the user rewrote since the last call could return the
// old bytes. The device API's operations then read only the stage, the peers' scratch (volatile
// loads) and the counters (volatile), and write the results through to L2.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <new>
#include <string>

#include "hpcolls/device/collectives.cuh"
#include "hpcolls/device_clock.cuh"
#include "hpcolls/dispatch.cuh"
#include "hpcolls/errors.h"
#include "hpcolls/resident_service.h"
#include "hpcolls/stream_write.h"

namespace hpcolls {
namespace {

namespace dev = hpcolls::device;
constexpr int kThreads = 256;
constexpr uint32_t kStageWords = uint32_t(kResidentStageBytes / 16);
// The request's fields, in 8-byte words before `posted` (which the doorbell carries instead).
constexpr uint32_t kFieldWords = uint32_t(offsetof(ResidentRequest, posted) / 8);
static_assert(offsetof(ResidentRequest, posted) % 8 == 0 && alignof(ResidentRequest) == 8,
              "the fields are whole 8-byte words");
static_assert(sizeof(ResidentReply) == 8, "a reply is one 8-byte store");

// stage[0, bytes) <- from[0, bytes), through L2 (__ldcg); the block's threads together.
__device__ void stage_in(uint4* stage, const char* from, uint32_t bytes) {
  if (dev::detail::aligned16(from)) {
    for (uint32_t i = threadIdx.x; i < bytes / 16; i += blockDim.x) stage[i] = __ldcg(reinterpret_cast<const uint4*>(from) + i);
    for (uint32_t b = bytes / 16 * 16 + threadIdx.x; b < bytes; b += blockDim.x)
      reinterpret_cast<unsigned char*>(stage)[b] = __ldcg(reinterpret_cast<const unsigned char*>(from) + b);
  } else {
    for (uint32_t b = threadIdx.x; b < bytes; b += blockDim.x)
      reinterpret_cast<unsigned char*>(stage)[b] = __ldcg(reinterpret_cast<const unsigned char*>(from) + b);
  }
}

// to[0, bytes) <- staged bytes; the block's threads together.
__device__ void stage_out(char* to, const unsigned char* staged, uint32_t bytes) {
  for (uint32_t b = threadIdx.x; b < bytes; b += blockDim.x) to[b] = char(staged[b]);
}

// rank_order[i] = block 0 [i] OP block 1 [i] OP ... (blocks of `bytes` back to back in `from`),
// strictly in rank order, as the host path's one-shot kernels combine them (so bit for bit the
// same), for the elements of [offset, offset + out_bytes) into to[0, out_bytes).
template <typename T, Op OP>
__device__ void reduce_blocks(const unsigned char* from, int nranks, uint32_t bytes, uint32_t offset,
                              uint32_t out_bytes, char* to) {
  using R = Reduce<T, OP>;
  const T* blocks = reinterpret_cast<const T*>(from);
  const uint32_t count = bytes / sizeof(T), first = offset / sizeof(T), n = out_bytes / sizeof(T);
#pragma unroll 1
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    T acc = blocks[first + i];
#pragma unroll 1
    for (int q = 1; q < nranks; ++q) acc = R::apply(acc, blocks[size_t(q) * count + first + i]);
    __builtin_memcpy(to + size_t(i) * sizeof(T), &acc, sizeof(T));  // `to` may be unaligned
  }
}

// The reductions: every rank's message into `gathered` (a one-shot exchange of the device API's,
// under the collective's name for a time-out's record), then each rank reduces the part it keeps.
// One exchange for every type and op and a small loop per pair: the device API's allreduce for
// each of ~70 pairs in one kernel left the register allocator spilling throughout.
__device__ dev::Status reduce_call(const dev::Comm& c, Collective collective, const ResidentRequest& q,
                                   const unsigned char* staged, unsigned char* gathered, uint32_t bytes,
                                   uint32_t offset, uint32_t out_bytes, char* to) {
  const unsigned char* blocks = staged;
  dev::detail::open_operation();
  if (c.nranks > 1) {
    const bool vec_ok = bytes % 16 == 0;  // both buffers are 16-byte aligned shared memory
    const dev::Status s = dev::detail::run(c, collective, [&](CallState<dev::detail::kMode>& call, uint32_t first, uint32_t step) {
      return allgather_oneshot_steps(call, c, reinterpret_cast<const char*>(staged), reinterpret_cast<char*>(gathered),
                                     bytes, bytes, vec_ok, first, step);
    });
    if (s != dev::Status::Ok) return s;
    blocks = gathered;
  }
  if (to != nullptr)
    visit_element(DType(q.dtype), Op(q.op), [&](auto type_tag, auto op_tag) {
      reduce_blocks<decltype(type_tag), decltype(op_tag)::value>(blocks, c.nranks, bytes, offset, out_bytes, to);
      return true;
    }, false);
  return dev::Status::Ok;
}

// One call, by every thread of the block; ends with a block barrier (its stores done).
__device__ dev::Status serve(const dev::Comm& c, const ResidentRequest& q, uint4* stage, uint4* gather) {
  const char* send = reinterpret_cast<const char*>(q.send);
  char* recv = reinterpret_cast<char*>(q.recv);
  unsigned char* staged = reinterpret_cast<unsigned char*>(stage);
  unsigned char* gathered = reinterpret_cast<unsigned char*>(gather);
  const uint32_t bytes = uint32_t(q.bytes);
  dev::Status s = dev::Status::Ok;
  switch (ResidentKind(q.kind)) {
    case ResidentKind::Allreduce:
      stage_in(stage, send, bytes);
      s = reduce_call(c, Collective::Allreduce, q, staged, gathered, bytes, 0, bytes, recv);
      break;
    case ResidentKind::Reduce:  // only the root reduces
      stage_in(stage, send, bytes);
      s = reduce_call(c, Collective::Reduce, q, staged, gathered, bytes, 0, bytes, c.rank == q.root ? recv : nullptr);
      break;
    case ResidentKind::ReduceScatter:  // each rank reduces its own block
      stage_in(stage, send, bytes);
      s = reduce_call(c, Collective::ReduceScatter, q, staged, gathered, bytes, uint32_t(q.slice_offset),
                      uint32_t(q.slice_bytes), recv);
      break;
    case ResidentKind::Bcast:
      if (c.rank == q.root) stage_in(stage, recv, bytes);
      s = dev::broadcast(c, staged, bytes, q.root);
      if (s == dev::Status::Ok && c.rank != q.root) stage_out(recv, staged, bytes);
      break;
    case ResidentKind::Allgather:
      stage_in(stage, send, bytes);
      s = dev::allgather(c, staged, reinterpret_cast<unsigned char*>(recv), bytes);
      break;
    default:
      break;
  }
  __syncthreads();
  return s;
}

__device__ uint32_t load_acquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Serves the calls rung after `served` until none came for idle_ns, or a Leave. Thread 0 polls the
// doorbell in device memory (an acquire load: the call's fields, written by the host before the
// doorbell was enqueued, are read after it, behind the block barrier). The fields are read a word
// a thread, at once: each read of host memory is a round trip over the bus, and one thread's
// reads in turn cost one each (docs/PERFORMANCE.md#pmpi-resident). What the kernel keeps between
// calls lives in shared memory: a register live across serve()'s calls would be spilled around each.
__global__ void __launch_bounds__(kThreads)
    resident_service_kernel(dev::Comm comm, const ResidentRequest* request, const uint32_t* doorbell,
                            ResidentReply* reply, uint32_t served, uint64_t idle_ns) {
  static_assert(kThreads >= kFieldWords, "a thread for each word of the call");
  __shared__ uint4 stage[kStageWords];
  extern __shared__ uint4 gather[];  // kResidentGatherBytes: every rank's message, for the reductions
  __shared__ dev::Comm c;  // read by every operation: shared memory, not the parameter bank (PERFORMANCE.md#device-api-latency)
  __shared__ ResidentRequest call;  // call.posted: the call being served, or the last one
  __shared__ uint64_t idle_since;
  __shared__ bool leave;
  if (threadIdx.x == 0) {
    c = comm;
    call.posted = served;
    idle_since = global_timer_ns();
  }
  for (;;) {
    if (threadIdx.x == 0) {
      uint32_t rung = load_acquire(doorbell);
      while (rung == call.posted && global_timer_ns() - idle_since <= idle_ns) rung = load_acquire(doorbell);
      leave = rung == call.posted;
      call.posted = rung;
    }
    __syncthreads();
    if (leave) return;
    if (threadIdx.x < kFieldWords)
      reinterpret_cast<uint64_t*>(&call)[threadIdx.x] = reinterpret_cast<const volatile uint64_t*>(request)[threadIdx.x];
    __syncthreads();
    if (ResidentKind(call.kind) == ResidentKind::Leave) return;
    const dev::Status s = serve(c, call, stage, gather);
    if (threadIdx.x == 0) {
      // Every thread's results (ordered by serve's closing barrier) before the reply.
      __threadfence_system();
      static_cast<volatile ResidentReply*>(reply)->done_status = uint64_t(uint32_t(s)) << 32 | call.posted;
      idle_since = global_timer_ns();
    }
  }
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ResidentService::ResidentService(const hpcolls_device_comm_t& comm, int device, double idle_s)
    : comm_(comm), device_(device), idle_s_(idle_s), idle_ns_(uint64_t(idle_s * 1e9)) {
  cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  void* host = nullptr;
  cuda_check(cudaHostAlloc(&host, 2 * 128, cudaHostAllocMapped), "cudaHostAlloc");
  static_assert(sizeof(ResidentRequest) <= 128 && sizeof(ResidentReply) <= 128, "one 128-byte line each");
  request_ = new (host) ResidentRequest{};
  reply_ = new (static_cast<char*>(host) + 128) ResidentReply{};
  void* dev_base = nullptr;
  cuda_check(cudaHostGetDevicePointer(&dev_base, host, 0), "cudaHostGetDevicePointer");
  request_dev_ = static_cast<ResidentRequest*>(dev_base);
  cuda_check(cudaMalloc(&doorbell_, sizeof(uint32_t)), "cudaMalloc(doorbell)");
  cuda_check(cudaMemset(doorbell_, 0, sizeof(uint32_t)), "cudaMemset(doorbell)");
  cuda_check(cudaFuncSetAttribute(resident_service_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  int(kResidentGatherBytes)),
             "cudaFuncSetAttribute(resident_service_kernel)");
  reply_dev_ = reinterpret_cast<ResidentReply*>(static_cast<char*>(dev_base) + 128);
}

ResidentService::~ResidentService() {
  if (running_) {
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != device_) (void)cudaSetDevice(device_);
    if (cudaStreamQuery(stream_) == cudaErrorNotReady) {
      ResidentRequest leave{};
      leave.kind = int32_t(ResidentKind::Leave);
      try {
        post(leave, cudaStreamLegacy);  // not stream_: its own kernel holds that one
      } catch (...) {
        // the doorbell refused: the kernel leaves after its idle life instead
      }
    }
    (void)cudaStreamSynchronize(stream_);
  }
  if (doorbell_ != nullptr) (void)cudaFree(doorbell_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  if (request_ != nullptr) (void)cudaFreeHost(request_);
}

size_t ResidentService::max_bytes(ResidentKind kind) const {
  uint64_t limit = 0;
  switch (kind) {
    case ResidentKind::Bcast: limit = hpcolls_device_broadcast_max_bytes(&comm_); break;
    case ResidentKind::Allgather: limit = hpcolls_device_allgather_max_bytes(&comm_); break;
    case ResidentKind::Leave: return 0;
    default:  // the reductions gather every rank's message
      limit = hpcolls_device_allgather_max_bytes(&comm_);
      if (comm_.nranks > 0 && kResidentGatherBytes / size_t(comm_.nranks) < limit)
        limit = kResidentGatherBytes / size_t(comm_.nranks);
      break;
  }
  return size_t(limit < kResidentStageBytes ? limit : kResidentStageBytes);
}

bool ResidentService::available() { return stream_write_available(); }

uint32_t ResidentService::post(const ResidentRequest& call, cudaStream_t stream) {
  const uint32_t seq = ++seq_;
  *request_ = call;  // read by the kernel only once the doorbell rings, which the host enqueues after
  std::atomic_thread_fence(std::memory_order_release);
  if (!stream_write_u32(stream, doorbell_, seq))
    throw CudaError("hpcolls: the resident kernel's doorbell (cuStreamWriteValue32) could not be enqueued");
  return seq;
}

void ResidentService::launch(uint32_t served) {
  resident_service_kernel<<<1, kThreads, kResidentGatherBytes, stream_>>>(comm_, request_dev_, doorbell_, reply_dev_,
                                                                       served, idle_ns_);
  cuda_check(cudaGetLastError(), "launch(resident_service_kernel)");
  running_ = true;
  ++launches_;
}

bool ResidentService::kernel_left() {
  const cudaError_t e = cudaStreamQuery(stream_);
  if (e == cudaErrorNotReady) return false;
  cuda_check(e, "cudaStreamQuery(resident kernel)");
  return true;
}

bool ResidentService::launch_if_left(uint32_t seq) {
  // A kernel that saw the call replies before it can leave, and its reply is final once its
  // stream is idle: launched again only when it left without it (never served twice).
  if (running_ && (!kernel_left() || uint32_t(static_cast<const volatile ResidentReply*>(reply_)->done_status) == seq))
    return false;
  launch(seq - 1);
  return true;
}

int ResidentService::run(const ResidentRequest& call, cudaStream_t stream) {
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != device_) cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  const uint32_t seq = post(call, stream);
  // A kernel idle for long is likely gone: look (a stream query) before spinning on a reply that
  // would then never come. Past this, the spin itself looks now and then.
  if (!running_ || now_s() - last_done_s_ > idle_s_ / 2) launch_if_left(seq);
  const volatile ResidentReply* reply = reply_;
  const double posted_at = now_s();
  const double patience = 2 * double(comm_.timeout_ns) * 1e-9 + 5;
  double deadline = posted_at + patience;
  double next_look = posted_at + 20e-6;
  for (unsigned spins = 1; uint32_t(reply->done_status) != seq; ++spins) {
    if ((spins & 0xff) != 0) continue;
    const double t = now_s();
    if (t < next_look) continue;
    next_look = t + 20e-6;
    if (launch_if_left(seq) || t <= deadline) continue;
    // The exchange's waits are bounded by the time-out; the caller's earlier work on `stream`,
    // which the doorbell waits for, is not.
    if (cudaStreamQuery(stream) == cudaErrorNotReady) {
      deadline = t + patience;
      continue;
    }
    throw CollectiveTimeout("hpcolls: the resident kernel did not answer call " + std::to_string(seq) + " within " +
                            std::to_string(t - posted_at) + " s of its doorbell");
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  last_done_s_ = now_s();
  return int(int32_t(reply->done_status >> 32));
}

}  // namespace hpcolls
