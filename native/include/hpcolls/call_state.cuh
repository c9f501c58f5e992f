// Per-call state of a collective kernel: the epoch, the scratch half it uses, bounded polling,
// and the end-of-call epoch advance.
//
// Double buffering by epoch parity: call e uses half (e & 1). A rank sends call e only after it
// has received every peer's data of call e-1, and a peer sends e-1 only after finishing e-2, so
// by then every peer is done reading half (e & 1) from call e-2: a receive grants the next send.
#pragma once
#include <cstdint>

#include "hpcolls/device_clock.cuh"
#include "hpcolls/ll_line.cuh"
#include "hpcolls/types.h"

namespace hpcolls {

class CallState {
 public:
  __device__ explicit CallState(const DevComm& c, Algo algo) : c_(c), algo_(algo) {
    const volatile DeviceCounters* k = c.counters;
    epoch_ = k->epoch + 1;  // stable for the whole call: only the call's last block advances it
    broken_ = k->error != 0;
  }

  __device__ uint32_t flag() const { return epoch_; }
  __device__ int ll_mode() const { return c_.ll_mode; }
  __device__ bool broken() const { return broken_; }

  // This call's half of `rank`'s scratch, as LL lines.
  __device__ uint4* half(int rank) const {
    return reinterpret_cast<uint4*>(static_cast<char*>(c_.scratch[rank]) + (epoch_ & 1) * c_.half_bytes);
  }

  // Waits for one 16-byte chunk (two LL lines) sent by `peer` into our own scratch at `lines`.
  // Returns false on time-out, or when another block of this call already timed out.
  __device__ bool receive_chunk(const uint4* lines, int peer, uint4& out) {
    uint2 lo, hi;
    bool got_lo = false, got_hi = false;
    for (uint32_t spin = 0;; ++spin) {
      if (!got_lo) got_lo = LLLine::try_read(lines, epoch_, lo, c_.ll_mode);
      if (!got_hi) got_hi = LLLine::try_read(lines + 1, epoch_, hi, c_.ll_mode);
      if (got_lo && got_hi) break;
      if (broken_) return false;
      if ((spin & 255) == 255) {
        if (static_cast<const volatile DeviceCounters*>(c_.counters)->error) broken_ = true;
        else if (past_deadline()) { report_timeout(peer); broken_ = true; }
      }
    }
    out = make_uint4(lo.x, lo.y, hi.x, hi.y);
    return true;
  }

  // Called by every thread at the end: the last block to finish advances the device epoch.
  // Only the next kernel on the stream reads the counters, and a kernel boundary already
  // orders every store of this one before it, so no fence is needed here. A single-block call
  // (every message up to 4 KiB) advances the epoch without the atomic round trip.
  __device__ void finish() {
    __syncthreads();
    if (threadIdx.x != 0) return;
    if (gridDim.x == 1) {
      c_.counters->epoch = epoch_;
      return;
    }
    const uint32_t done = atomicAdd(&c_.counters->blocks_done, 1u);
    if (done == gridDim.x - 1) {
      c_.counters->blocks_done = 0;
      c_.counters->epoch = epoch_;
    }
  }

  // Pushes one chunk to `lines` of this call's half of every peer's scratch, starting from the
  // next rank up, so that ranks do not all hit rank 0 first. Not unrolled: the rank count is
  // known only at run time, and unrolled copies made the kernel 60% larger for nothing.
  __device__ void push_to_peers(size_t lines, uint4 chunk) const {
#pragma unroll 1
    for (int k = 1; k < c_.nranks; ++k) ll_store_chunk(half((c_.rank + k) % c_.nranks) + lines, chunk, epoch_, c_.ll_mode);
  }

 private:
  // The deadline starts at a thread's first slow poll, not at kernel entry: a call that never
  // waits (one rank, or data already there) does not read the clock at all.
  __device__ bool past_deadline() {
    const uint64_t now = global_timer_ns();
    if (deadline_ == 0) deadline_ = now + c_.timeout_ns;
    return now > deadline_;
  }

  __device__ void report_timeout(int peer) {
    if (atomicCAS(&c_.counters->error, 0, 1) != 0) return;  // another thread already reported
    volatile ErrorRecord* r = c_.host_error;
    r->rank = c_.rank;
    r->peer = peer;
    r->algo = static_cast<int>(algo_);
    r->epoch = epoch_;
    __threadfence_system();
    r->code = 1;
    __threadfence_system();
  }

  const DevComm& c_;
  Algo algo_;
  uint32_t epoch_;
  bool broken_;
  uint64_t deadline_ = 0;  // set by past_deadline()
};

}  // namespace hpcolls
