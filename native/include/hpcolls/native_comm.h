// The native half of an hpcolls communicator on one rank: scratch, device counters, the
// host-mapped error record, selection between one-shot and two-shot, and the launch.
// MPI stays in Python: the caller exchanges IPC handles and hands them to open_peers().
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hpcolls/collective_args.h"
#include "hpcolls/diagnostics.h"
#include "hpcolls/peer_scratch.h"
#include "hpcolls/types.h"

namespace hpcolls {

// Algorithm request: Auto lets the size table decide.
enum class AlgoMode : int { Auto = -1, OneShot = 0, TwoShot = 1 };

class StreamFacts;  // native_comm.cpp: a call's stream, each query at most once per call

class NativeComm {
 public:
  NativeComm(int rank, int nranks, int device, size_t scratch_bytes, double timeout_s, int ranks_on_device);
  ~NativeComm();

  std::string export_handle() const { return scratch_->export_handle(); }
  void open_peers(const std::vector<std::string>& handles);

  void set_algo(AlgoMode mode) { mode_ = mode; }
  void set_oneshot_max_bytes(size_t b) { oneshot_max_bytes_ = b; }
  void set_twoshot_max_bytes(size_t b) { twoshot_max_bytes_ = b; }
  void set_timeout(double seconds);
  // LL store/poll variant (ll_line.cuh); 0 unless diagnosing. The default module has mode 0
  // only: another mode takes the diagnostic module's launchers (diagnostics.h).
  void set_ll_mode(int mode, const DiagnosticLaunchers* launchers);
  void set_threads_per_block(int threads);  // 0: chosen per call; else whole warps, for diagnosis
  // Programmatic dependent launch (dependent_launch.cuh): on unless turned off
  // (HPCOLLS_DEPENDENT_LAUNCH=0), and only where the GPU has it; with ranks sharing the GPU,
  // for one-block calls only (allreduce()).
  void set_dependent_launch(bool on) { dependent_launch_ = on && dependent_launch_supported_; }
  bool dependent_launch() const { return dependent_launch_; }

  // Largest message (bytes) each algorithm can carry with this scratch and rank count.
  size_t max_bytes(Algo algo) const;
  // Which algorithm a call of `bytes` would use; -1 when the native path cannot carry it.
  int select(size_t bytes) const;
  // The largest message select() takes, in whole 16-byte chunks (0: none): the piece size of a
  // larger message sent through the native path in pieces (hpcolls/communicator.py).
  size_t largest_message() const;
  // The kernel a call of `bytes` would run, for logs and tests: "one-shot (small-message
  // kernel)", "one-shot", "two-shot", or "" when the native path cannot carry it.
  std::string kernel(size_t bytes) const;

  // Launches on `stream`; returns the algorithm used, or -1 (nothing launched) when the message
  // does not fit the native path and the caller must fall back. Throws on a broken communicator.
  int allreduce(uintptr_t send, uintptr_t recv, size_t count, DType t, Op op, uintptr_t stream);

  // Reachability check for real: an int64 SUM of every rank's `nonce` through the one-shot
  // kernel on a private stream, waited for. Throws CollectiveTimeout if a peer's stores never land.
  int64_t probe(int64_t nonce);
  // Raises CollectiveTimeout if a kernel of this communicator gave up waiting for a peer.
  void check();
  // Waits for the communicator's last stream, then check().
  void synchronize();
  uint32_t host_epoch() const { return calls_; }
  void release();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int device() const { return device_; }
  size_t scratch_bytes() const { return scratch_->bytes(); }
  void* scratch_base(int r) const { return scratch_->base(r); }
  int max_blocks() const { return max_blocks_; }
  // The largest one-shot call the small-message kernel takes at this rank count (0: none).
  size_t small_oneshot_max_bytes() const {
    return small_kernel(1) ? oneshot_small_max_bytes(max_blocks_) : 0;
  }

 private:
  // Whether one-shot's call of `chunks` 16-byte chunks runs the small-message kernel.
  bool small_kernel(size_t chunks) const {
    return threads_override_ == 0 && oneshot_small_fits(dev_.nranks, dev_.ll_mode, chunks, max_blocks_);
  }
  void order_before_launch(cudaStream_t s, StreamFacts& facts);
  void note_launch(cudaStream_t s, StreamFacts& facts);
  void wait_last_call();
  [[noreturn]] void raise_timeout();

  int rank_, nranks_, device_;
  std::unique_ptr<PeerScratch> scratch_;
  DeviceCounters* counters_ = nullptr;
  ErrorRecord* host_error_ = nullptr;        // host address
  ErrorRecord* host_error_dev_ = nullptr;    // its device address
  DevComm dev_{};
  AlgoMode mode_ = AlgoMode::Auto;
  size_t oneshot_max_bytes_ = 64 << 10;
  size_t twoshot_max_bytes_ = SIZE_MAX;
  int max_blocks_ = 1;
  bool gpu_shared_ = false;  // other ranks' processes share this GPU (MPS): see allreduce()
  const DiagnosticLaunchers* diagnostic_ = nullptr;  // LL modes 1..3 (set_ll_mode)
  int threads_override_ = 0;  // HPCOLLS_THREADS_PER_BLOCK (diagnosis); 0: chosen per call
  bool dependent_launch_supported_ = false;  // compute capability 9.0 or later
  bool dependent_launch_ = false;
  uint32_t calls_ = 0;          // calls launched from the host (graph replays are not counted)
  bool broken_ = false;
  std::string broken_why_;
  bool peers_open_ = false;
  // Where the last call was launched: on a default stream (its handle stays valid), recorded in
  // order_event_ (the caller's stream, whose handle we must not keep; its ID we may), or nowhere
  // we can wait on.
  enum class LastCall { None, OnBuiltinStream, Recorded };
  LastCall last_ = LastCall::None;
  cudaStream_t last_stream_ = nullptr;     // OnBuiltinStream
  unsigned long long last_stream_id_ = 0;  // Recorded
  cudaEvent_t order_event_ = nullptr;
};

}  // namespace hpcolls
