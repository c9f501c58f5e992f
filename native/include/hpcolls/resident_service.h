// A kernel that stays resident on a stream of its own and runs a communicator's small blocking
// collectives as the host posts them, so that such a call costs a doorbell's round trip and the
// exchange instead of a kernel launch (most of a blocking call's cost:
// docs/PERFORMANCE.md#pmpi-latency). The PMPI library's opt-in (HPCOLLS_PMPI_RESIDENT_US,
// docs/DROP_IN.md#resident); every exchange is the device API's
// (hpcolls/device/collectives.cuh), so it shares the communicator's epochs, error record and
// bit-for-bit results with the host-launched kernels.
//
// A call is posted in two parts: its fields into host-mapped memory, then its sequence number into
// device memory by a stream memory operation on the caller's stream (stream_write.h), which the GPU
// performs after that stream's earlier work: the kernel, polling device memory, starts the call
// only once what the caller queued before it (a kernel that wrote the send buffer, a copy from
// pageable memory still in flight) is done, as a kernel launched on that stream would.
//
// The kernel leaves when no call came for `idle_s`, so that a device-wide synchronize
// (cudaDeviceSynchronize, cudaFree) waits at most that long for it; the next call launches it
// again. Whether a call finds it resident needs no timing: the host posts the call, spins on the
// reply, and where the kernel has left instead (its stream idle, no reply) launches it again,
// which then serves the posted call. A kernel leaves only after seeing no call posted, and the
// host relaunches only once its stream is idle, so a call is served exactly once.
//
// What the caller guarantees (the PMPI library does): the communicator's earlier calls are
// complete or on the stream it passes (an enqueued call on another stream waited for first).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "hpcolls/device/comm.h"
#include "hpcolls/types.h"

namespace hpcolls {

// Bytes a resident call may move (per rank for Allgather, the whole message otherwise): the
// kernel stages the data it reads in shared memory of this size (resident_service.cu says why).
constexpr size_t kResidentStageBytes = 16384;
// Shared memory for every rank's message of a reduction, reduced in rank order after the
// exchange: a reduction takes at most this over the rank count.
constexpr size_t kResidentGatherBytes = 65536;

// Leave: the kernel returns at once (the destructor's call).
enum class ResidentKind : int32_t { Allreduce, Bcast, Allgather, Reduce, ReduceScatter, Leave };

// One call, as the host posts it (host-mapped, written by the host before the doorbell).
struct ResidentRequest {
  uint64_t send, recv;       // device addresses (Bcast: buf in both)
  uint64_t bytes;            // Allgather: per rank; otherwise the whole message
  uint64_t slice_offset;     // ReduceScatter: this rank's block of the result, in bytes ...
  uint64_t slice_bytes;      // ... copied to recv
  int32_t kind, dtype, op, root;  // ResidentKind, DType, Op; root: Bcast, Reduce
  uint32_t posted;                // the kernel's copy of the call's sequence number (the host rings it)
};

// The kernel's answer (host-mapped, written by the kernel in one store after its results): the
// sequence number of the last call served, and its hpcolls_device_status in the high word.
struct ResidentReply {
  uint64_t done_status;
};

class ResidentService {
 public:
  // comm: the communicator's device API struct (NativeComm::device_comm()); device: its GPU.
  ResidentService(const hpcolls_device_comm_t& comm, int device, double idle_s);
  ~ResidentService();  // waits for the kernel to leave (it leaves within idle_s)
  ResidentService(const ResidentService&) = delete;
  ResidentService& operator=(const ResidentService&) = delete;

  // The largest message it takes for `kind` (bytes as in ResidentRequest): the stage, within the
  // device API's limits on this communicator.
  size_t max_bytes(ResidentKind kind) const;

  // Runs one call after the earlier work of `stream` and returns once its result is in place: the
  // status (hpcolls_device_status; OK, or BROKEN after a time-out, which the communicator's error
  // record names). Fields as in ResidentRequest (not `posted`: the doorbell carries the sequence
  // number). Throws CudaError when the
  // kernel cannot be launched or the doorbell not enqueued, and CollectiveTimeout when no reply
  // comes within twice the communicator's time-out.
  int run(const ResidentRequest& call, cudaStream_t stream);

  // Whether this driver can ring the doorbell (stream memory operations); else nothing here runs.
  static bool available();

  // Launches of the kernel so far (the first call's, and one after each idle exit): for tests.
  uint64_t launches() const { return launches_; }

 private:
  uint32_t post(const ResidentRequest& call, cudaStream_t stream);  // fields, then the doorbell on `stream`
  void launch(uint32_t served);  // the kernel, told that calls up to `served` are answered
  bool kernel_left();  // its stream is idle: the kernel has returned
  bool launch_if_left(uint32_t seq);  // launches it (to serve call seq) where it left without it

  hpcolls_device_comm_t comm_;
  int device_;
  double idle_s_;
  uint64_t idle_ns_;
  cudaStream_t stream_ = nullptr;
  ResidentRequest* request_ = nullptr;  // host-mapped
  ResidentReply* reply_ = nullptr;      // host-mapped
  ResidentRequest* request_dev_ = nullptr;
  ResidentReply* reply_dev_ = nullptr;
  uint32_t* doorbell_ = nullptr;        // device memory: the last sequence number rung
  uint32_t seq_ = 0;
  bool running_ = false;
  uint64_t launches_ = 0;
  double last_done_s_ = 0;  // host time of the last reply (steady clock)
};

}  // namespace hpcolls
