// Per-call state of a collective kernel: the epoch, the scratch half it uses, bounded polling,
// and the end-of-call epoch advance.
//
// Double buffering by epoch parity: call e uses half (e & 1). A rank sends call e only after it
// has received every peer's data of call e-1, and a peer sends e-1 only after finishing e-2, so
// by then every peer is done reading half (e & 1) from call e-2: a receive grants the next send.
//
// Indices into a half are 32-bit line numbers: scratch is capped at 8 GiB (config.py and
// NativeComm's constructor), so a half and every message it carries stay below 4 GiB, and 64-bit
// index arithmetic was a measurable part of a small call.
#pragma once
#include <cstdint>
#include <type_traits>

#include "hpcolls/device_clock.cuh"
#include "hpcolls/ll_line.cuh"
#include "hpcolls/types.h"

namespace hpcolls {

// kMode: the LL store/poll variant (ll_line.cuh), fixed per kernel instantiation.
template <int kMode>
class CallState {
 public:
  using LL = LLLine<kMode>;

  __device__ explicit CallState(const DevComm& c, Algo algo) : c_(c), algo_(algo) {
    const volatile DeviceCounters* k = c.counters;
    epoch_ = k->epoch + 1;  // stable for the whole call: only the call's last block advances it
    broken_ = k->error != 0;
    half_offset_ = (epoch_ & 1) ? c.half_bytes : 0;
  }

  __device__ bool broken() const { return broken_; }

  // This call's half of `rank`'s scratch, as LL lines.
  __device__ uint4* half(int rank) const { return in_half(static_cast<uint4*>(c_.scratch[rank])); }

  // `lines`, an address in the first half of some rank's scratch, moved to this call's half. A
  // kernel that computes its scratch addresses before the epoch read (they are indexed kernel
  // parameters, a constant-cache load each) leaves only this add waiting for the epoch.
  template <typename Line>
  __device__ Line* in_half(Line* lines) const {
    using Byte = std::conditional_t<std::is_const_v<Line>, const char, char>;
    return reinterpret_cast<Line*>(reinterpret_cast<Byte*>(lines) + half_offset_);
  }

  // Stores one 16-byte chunk as two LL lines of this call at `dst`.
  __device__ void send_chunk(uint4* dst, uint4 chunk) const { ll_store_chunk<kMode>(dst, chunk, epoch_); }

  // Pushes one chunk to `line` of this call's half of every peer's scratch, starting from the
  // next rank up, so that ranks do not all hit rank 0 first. Not unrolled: the rank count is
  // known only at run time, and unrolled copies made the kernel 60% larger for nothing.
  __device__ void push_to_peers(uint32_t line, uint4 chunk) const {
    int peer = c_.rank;
#pragma unroll 1
    for (int k = 1; k < c_.nranks; ++k) {
      peer = peer + 1 == c_.nranks ? 0 : peer + 1;  // (rank + k) % nranks without a division
      send_chunk(half(peer) + line, chunk);
    }
  }

  // Polls line j = 0..kN-1 at base + (j / 2) * pair_stride + (j & 1), for each bit j set in
  // `pending`, until each holds this call's data, words[j]. Every round issues all outstanding
  // loads before looking at any, so their round trips overlap instead of adding up. False on
  // time-out (the error names peer_of(j) of the first line still missing), or when another thread
  // of this call already timed out.
  template <int kN, typename PeerOf>
  __device__ bool receive_lines(const uint4* base, uint32_t pair_stride, uint32_t pending,
                                ulonglong2 (&words)[kN], PeerOf peer_of) {
    static_assert(kN <= 32, "pending is a 32-bit mask");
    for (uint32_t spin = 0;; ++spin) {
#pragma unroll
      for (int j = 0; j < kN; ++j)
        if (pending >> j & 1) words[j] = LL::load(base + (j / 2) * pair_stride + (j & 1));
#pragma unroll
      for (int j = 0; j < kN; ++j)
        if ((pending >> j & 1) && LL::complete(words[j], epoch_)) pending &= ~(1u << j);
      if (pending == 0) break;
      if (!may_wait(spin, [&] { return peer_of(__ffs(pending) - 1); })) return false;
    }
    LL::after_complete();
    return true;
  }

  // Waits for one 16-byte chunk (two LL lines) sent by `peer` into our own scratch at `lines`:
  // both lines are loaded every round and the chunk taken when both are this call's, which is
  // fewer instructions than keeping the line that arrived first (receive_lines).
  __device__ bool receive_chunk(const uint4* lines, int peer, uint4& out) {
    for (uint32_t spin = 0;; ++spin) {
      const ulonglong2 lo = LL::load(lines), hi = LL::load(lines + 1);
      if (LL::complete(lo, epoch_) && LL::complete(hi, epoch_)) {
        LL::after_complete();
        out = chunk_of(lo, hi);
        return true;
      }
      if (!may_wait(spin, [peer] { return peer; })) return false;
    }
  }

  // The payload of a chunk's two received lines.
  __device__ static uint4 chunk_of(ulonglong2 lo, ulonglong2 hi) {
    return make_uint4(uint32_t(lo.x), uint32_t(lo.y), uint32_t(hi.x), uint32_t(hi.y));
  }

  // Called by every thread at the end: the last block to finish advances the device epoch.
  // Only the next kernel on the stream reads the counters, and a kernel boundary already
  // orders every store of this one before it, so no fence is needed here. A single-block call
  // (every message up to 4 KiB) advances the epoch without the atomic round trip. The barrier
  // keeps the epoch store after every thread's epoch read; a block of one warp needs only the
  // warp's, which is cheaper than a block barrier.
  __device__ void finish() {
    if (blockDim.x > 32) __syncthreads();
    else __syncwarp();
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

 private:
  // Between poll rounds: false once this call must stop waiting, because another thread's time-out
  // marked the communicator, or because this thread's deadline passed (reported against
  // peer_now(), the peer still missing). Every 256th round looks at the counters and the clock.
  template <typename PeerNow>
  __device__ bool may_wait(uint32_t spin, PeerNow peer_now) {
    if (broken_) return false;
    if ((spin & 255) == 255) {
      if (static_cast<const volatile DeviceCounters*>(c_.counters)->error) {
        broken_ = true;
      } else if (past_deadline()) {
        report_timeout(peer_now());
        broken_ = true;
      }
    }
    return !broken_;
  }

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
  uint64_t half_offset_;  // 0 or half_bytes: the epoch's parity picks the half
  bool broken_;
  uint64_t deadline_ = 0;  // set by past_deadline()
};

}  // namespace hpcolls
