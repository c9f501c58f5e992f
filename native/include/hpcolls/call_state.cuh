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
  using Packet = LLPacket<kMode>;

  __device__ explicit CallState(const device::Comm& c, Algo algo, Collective collective = Collective::Allreduce)
      : c_(c), algo_(algo), collective_(collective) {
    const volatile DeviceCounters* k = c.counters;
    epoch_ = k->epoch + 1;  // stable for the whole call: only the call's last block advances it
    broken_ = k->error != 0;
    half_offset_ = (epoch_ & 1) ? c.half_bytes : 0;
  }

  __device__ bool broken() const { return broken_; }
  __device__ uint32_t epoch() const { return epoch_; }

  // This call's half of `rank`'s scratch, as LL lines.
  __device__ LLLine* half(int rank) const { return in_half(static_cast<LLLine*>(c_.scratch[rank])); }

  // `lines`, an address in the first half of some rank's scratch, moved to this call's half. A
  // kernel that computes its scratch addresses before the epoch read (they are indexed kernel
  // parameters, a constant-cache load each) leaves only this add waiting for the epoch.
  template <typename Line>
  __device__ Line* in_half(Line* lines) const {
    using Byte = std::conditional_t<std::is_const_v<Line>, const char, char>;
    return reinterpret_cast<Line*>(reinterpret_cast<Byte*>(lines) + half_offset_);
  }

  // Stores one 16-byte chunk as two LL lines of this call, at `lo` and `hi` (by default the next
  // line: a chunk's lines side by side).
  __device__ void send_chunk(LLLine* lo, uint4 chunk) const { send_chunk(lo, lo + 1, chunk); }
  __device__ void send_chunk(LLLine* lo, LLLine* hi, uint4 chunk) const {
    Packet::write(lo, chunk.x, chunk.y, epoch_);
    Packet::write(hi, chunk.z, chunk.w, epoch_);
  }

  // Stores one LL line of this call that carries no data, only the epoch: the handshake line of
  // a rooted collective (handshake.cuh).
  __device__ void send_line(LLLine* dst) const { Packet::write(dst, 0, 0, epoch_); }

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
  __device__ bool receive_lines(const LLLine* base, uint32_t pair_stride, uint32_t pending,
                                Packet (&words)[kN], PeerOf peer_of) {
    static_assert(kN <= 32, "pending is a 32-bit mask");
    const auto round = [&] {
#pragma unroll
      for (int j = 0; j < kN; ++j)
        if (pending >> j & 1) words[j] = Packet::read(base + (j / 2) * pair_stride + (j & 1));
#pragma unroll
      for (int j = 0; j < kN; ++j)
        if ((pending >> j & 1) && words[j].holds(epoch_)) pending &= ~(1u << j);
      return pending == 0;
    };
    return poll_until(round, [&] { return peer_of(__ffs(pending) - 1); });
  }

  // Waits for chunk `line` of every rank's slot (slot q at slots + q * slot_lines, its second
  // line `gap` lines after the first), kRanks fixed at compile time; words[2q], words[2q + 1] are
  // then rank q's two lines. The caller has stored its own chunk into its own slot too, so every
  // rank's lines are polled alike (a load after our own store sees it) and reduced in rank order
  // with no test of which is ours. Every round reloads every line and tests them all at once: a
  // line that has arrived stays (a peer cannot reuse this half before we send it the next call).
  // False on time-out (the error names the lowest rank still missing).
  template <int kRanks>
  __device__ bool receive_every_rank(const LLLine* slots, uint32_t slot_lines, uint32_t line, uint32_t gap,
                                     Packet (&words)[2 * kRanks]) {
    const auto round = [&] {
#pragma unroll
      for (int q = 0; q < kRanks; ++q) {
        words[2 * q] = Packet::read(slots + q * slot_lines + line);
        words[2 * q + 1] = Packet::read(slots + q * slot_lines + line + gap);
      }
      bool all = true;  // bitwise &, not &&: no branch between the tests
#pragma unroll
      for (int j = 0; j < 2 * kRanks; ++j) all &= words[j].holds(epoch_);
      return all;
    };
    const auto missing = [&] {  // unrolled, so that words stays in registers
      int first = kRanks - 1;
#pragma unroll
      for (int q = kRanks - 1; q >= 0; --q)
        if (!words[2 * q].holds(epoch_) || !words[2 * q + 1].holds(epoch_)) first = q;
      return first;
    };
    return poll_until(round, missing);
  }

  // Waits for one 16-byte chunk (two LL lines) sent by `peer` into our own scratch at `lines`:
  // both lines are loaded every round and the chunk taken when both are this call's, which is
  // fewer instructions than keeping the line that arrived first (receive_lines).
  __device__ bool receive_chunk(const LLLine* lines, int peer, uint4& out) {
    Packet lo, hi;
    const auto round = [&] {
      lo = Packet::read(lines);
      hi = Packet::read(lines + 1);
      return lo.holds(epoch_) && hi.holds(epoch_);
    };
    if (!poll_until(round, [peer] { return peer; })) return false;
    out = Packet::chunk_of(lo, hi);
    return true;
  }

  // Public for the other protocols' receives (sentinel.cuh), which poll words of their own kind.
  // Runs `round` (one round of loads and tests: true once everything awaited is this call's)
  // until it returns true, or until this call must stop waiting: false once another thread's
  // time-out marked the communicator, or this thread's deadline passed (reported against
  // peer_now(), the peer still missing). The counters and the clock are looked at only between
  // runs of kRoundsBetweenChecks rounds, so a round is its loads and tests and a loop branch:
  // the bookkeeping, run every round, made the poll's period a third longer than its load's
  // round trip, and data that lands just after a load was issued waits a whole period.
  template <typename Round, typename PeerNow>
  __device__ bool poll_until(Round round, PeerNow peer_now) {
    constexpr uint32_t kRoundsBetweenChecks = 256;
    while (!broken_) {
#pragma unroll 1
      for (uint32_t spin = 0; spin < kRoundsBetweenChecks; ++spin) {
        if (round()) {
          Packet::after_complete();
          return true;
        }
      }
      if (static_cast<const volatile DeviceCounters*>(c_.counters)->error) {
        broken_ = true;
      } else if (past_deadline()) {
        report_timeout(peer_now());
        broken_ = true;
      }
    }
    return false;
  }

  // poll_until for a round the whole warp runs together (a warp-collective test, as an LL128
  // tile's holds(), ll128_line.cuh): every lane calls it with the same rounds, and the decision to
  // stop waiting is the warp's (__any_sync), never one lane's, so no lane leaves while the others
  // still call the round's shuffles. The deadline and the counters are looked at as in poll_until.
  template <typename Round, typename PeerNow>
  __device__ bool warp_poll_until(Round round, PeerNow peer_now) {
    constexpr uint32_t kRoundsBetweenChecks = 256;
    if (__any_sync(0xffffffffu, broken_)) {
      broken_ = true;
      return false;
    }
    while (true) {
#pragma unroll 1
      for (uint32_t spin = 0; spin < kRoundsBetweenChecks; ++spin)
        if (round()) return true;  // round() is warp-uniform
      const bool error = static_cast<const volatile DeviceCounters*>(c_.counters)->error != 0;
      const bool late = !error && past_deadline();
      if (__any_sync(0xffffffffu, error || late)) {
        if (late) report_timeout(peer_now());  // the first reporter wins (report_timeout)
        broken_ = true;
        return false;
      }
    }
  }

  // Called by every thread once past CallState's constructor, at the end of the call or earlier
  // (nothing reads the epoch after the constructor): the last block to get here advances the
  // device epoch. Only the next kernel on the stream reads the counters, and a kernel boundary
  // already orders every store of this one before it, so no fence is needed here. A
  // single-block call advances the epoch without the atomic round trip. The barrier keeps the
  // epoch store after every thread's epoch read.
  __device__ void finish() {
    if (gridDim.x == 1) return finish_one_block();
    __syncthreads();
    if (threadIdx.x != 0) return;
    const uint32_t done = atomicAdd(&c_.counters->blocks_done, 1u);
    if (done == gridDim.x - 1) {
      c_.counters->blocks_done = 0;
      c_.counters->epoch = epoch_;
    }
  }

  // finish() for a kernel launched as one block. Nothing in a call reads the epoch after
  // CallState's constructor, so a one-block kernel may call this as soon as every thread has
  // constructed its CallState: the epoch store then leaves the end of the call. A block of one
  // warp needs only the warp's barrier, which is cheaper than a block barrier.
  __device__ void finish_one_block() {
    if (blockDim.x > 32) __syncthreads();
    else __syncwarp();
    if (threadIdx.x == 0) advance_epoch();
  }

  // The epoch store of finish_one_block(), for a caller that orders it itself: one thread stores,
  // after a barrier that follows every thread's construction of its CallState (the device API's
  // block-scope operations, whose blocks may have any shape: hpcolls/device/collectives.cuh).
  __device__ void advance_epoch() const { c_.counters->epoch = epoch_; }

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
    if (collective_ != Collective::Allreduce) r->collective = static_cast<int>(collective_);
    __threadfence_system();
    r->code = 1;
    __threadfence_system();
  }

  const device::Comm& c_;
  Algo algo_;
  Collective collective_;
  uint32_t epoch_;
  uint64_t half_offset_;  // 0 or half_bytes: the epoch's parity picks the half
  bool broken_;
  uint64_t deadline_ = 0;  // set by past_deadline()
};

}  // namespace hpcolls
