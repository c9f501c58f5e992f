// The native half of an hpcolls communicator on one rank: scratch, device counters, the
// host-mapped error record, selection between one-shot and two-shot, and the launch.
// MPI stays in Python: the caller exchanges IPC handles and hands them to open_peers().
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpcolls/collective_args.h"
#include "hpcolls/diagnostics.h"
#include "hpcolls/ll128_probe.h"
#include "hpcolls/peer_scratch.h"
#include "hpcolls/plan.h"
#include "hpcolls/types.h"

namespace hpcolls {

class StreamFacts;  // native_comm.cpp: a call's stream, each query at most once per call

class NativeComm {
 public:
  // scratch_bytes: the LL region; sentinel_bytes, ll128_bytes: those protocols' regions (0: the
  // protocol off). Each region is one allocation of its own, exported and opened as the LL one.
  NativeComm(int rank, int nranks, int device, size_t scratch_bytes, double timeout_s, int ranks_on_device,
             size_t sentinel_bytes = 0, size_t ll128_bytes = 0);
  ~NativeComm();

  // Every region's CUDA IPC handle, in Protocol order, each marked present or absent; open_peers
  // takes every rank's. A protocol whose region some rank lacks is off on every rank.
  std::string export_handle() const;
  void open_peers(const std::vector<std::string>& handles);

  void set_algo(AlgoMode mode) { in_.mode = mode; }
  // Overrides of the selection table (plan.h); nullopt: the table's.
  void set_oneshot_max_bytes(std::optional<size_t> b) { in_.oneshot_max_bytes = b; }
  void set_twoshot_max_bytes(std::optional<size_t> b) { in_.twoshot_max_bytes = b; }
  void set_protocol(ProtocolMode p);  // HPCOLLS_PROTOCOL: auto, or one forced
  ProtocolMode protocol() const { return in_.protocol; }
  // Set by LL128's torn-line probe where it showed LL128 lines arrive whole (off until then).
  void set_ll128_available(bool on) { in_.ll128_available = on; }
  bool ll128_available() const { return in_.ll128_available; }
  // The torn-line probe (ll128_probe.h) over the first area_bytes of every rank's LL128 region,
  // after our last call; collective: every rank calls it with the same tag and area_bytes (at most
  // the smallest rank's region, so that every rank lays the lines out alike), no peer's call in
  // flight. Throws std::invalid_argument where ll128_probe_error() names a reason (checked before
  // any CUDA call).
  LL128ProbeReport probe_ll128(uint32_t tag, double write_s, double wait_s, size_t area_bytes);
  std::string ll128_probe_error(double write_s, double wait_s, size_t area_bytes) const;  // "": it can run
  // NCCL carries what the native path declines here (a GPU per rank): the table's limit then applies.
  void set_nccl_alternative(bool on) { in_.nccl_alternative = on; }
  // The communicator's own selection rows (a tuned table, checked by selection_rows_problem);
  // empty: the built-in table's (plan.h).
  void set_selection_rows(std::vector<SelectionRow> rows) { in_.rows = std::move(rows); }
  const std::vector<SelectionRow>& selection_rows() const { return in_.rows; }
  // Bytes of protocol p's region on this rank (0: absent, or off because some rank lacks it).
  size_t region_bytes(Protocol p) const;
  void set_timeout(double seconds);
  // LL store/poll variant (ll_line.cuh); 0 unless diagnosing. The default module has mode 0
  // only: another mode takes the diagnostic module's launchers (diagnostics.h).
  void set_ll_mode(int mode, const DiagnosticLaunchers* launchers);
  void set_threads_per_block(int threads);  // 0: chosen per call; else whole warps, for diagnosis
  // Programmatic dependent launch (dependent_launch.cuh): on unless turned off
  // (HPCOLLS_DEPENDENT_LAUNCH=0), and only where the GPU has it; with ranks sharing the GPU,
  // for one-block calls only (allreduce()).
  void set_dependent_launch(bool on) { in_.dependent_launch = on && dependent_launch_supported_; }
  bool dependent_launch() const { return in_.dependent_launch; }

  // How a call would run (plan.h). The queries below all read it.
  Plan plan_of(size_t bytes, DType t, Op op) const { return plan(in_, Collective::Allreduce, bytes, t, op); }
  Plan plan_of(Collective c, size_t bytes, DType t, Op op) const { return plan(in_, c, bytes, t, op); }
  // Largest message (bytes) each algorithm can carry with this scratch and rank count.
  size_t max_bytes(Algo algo) const { return capacity(in_, algo); }
  // Which algorithm a call of `bytes` would use; -1 when the native path cannot carry it whole.
  int select(size_t bytes) const;
  // The largest message select() takes, in whole 16-byte chunks (0: none): the piece size of a
  // larger message sent through the native path in pieces (hpcolls/communicator.py).
  size_t largest_message() const { return hpcolls::largest_message(in_, Collective::Allreduce); }
  size_t largest_allgather() const { return hpcolls::largest_message(in_, Collective::Allgather); }
  size_t largest(Collective c) const { return hpcolls::largest_message(in_, c); }
  // The kernel a call of `bytes` would run, for logs and tests: "one-shot (small-message
  // kernel)", "one-shot", "two-shot", or "" when the native path cannot carry it whole.
  std::string kernel(size_t bytes) const;

  // Launches on `stream`; returns the algorithm used, or -1 (nothing launched) when the message
  // does not fit the native path and the caller must fall back. Throws on a broken communicator.
  int allreduce(uintptr_t send, uintptr_t recv, size_t count, DType t, Op op, uintptr_t stream);
  // Allgather of `bytes` per rank: rank q's block lands at recv + q * stride (stride 0: bytes). In
  // place when send == recv + rank * stride. Returns 0, or -1 (nothing launched) when the block
  // does not fit the native path, or the communicator is in a diagnostic LL mode; throws as
  // allreduce() does.
  int allgather(uintptr_t send, uintptr_t recv, size_t bytes, size_t stride, uintptr_t stream);
  // The rooted collectives and Reduce_scatter (one-shot LL kernels, handshake.cuh). Each returns
  // 0, or -1 (nothing launched) when the message does not fit the native path or the communicator
  // is in a diagnostic LL mode, the same on every rank; throws as allreduce() does.
  // Bcast of `bytes` bytes from `root`'s buf into every other rank's.
  int bcast(uintptr_t buf, size_t bytes, int root, uintptr_t stream);
  // Reduce of `count` elements into `root`'s recv (not touched elsewhere); in place at the root
  // when send == recv (MPI_IN_PLACE).
  int reduce(uintptr_t send, uintptr_t recv, size_t count, DType t, Op op, int root, uintptr_t stream);
  // Reduce_scatter: block q (counts[q] elements at send + displs[q] elements; displs empty: the
  // blocks back to back) reduced into rank q's recv. In place when send == recv (the input in
  // recv, the result at its start): taken only when block 0 starts at send and no block is larger
  // than block 0 (the result must not reach past block 0's input). The displacements let a large
  // call run in pieces, each an element range of every block (hpcolls/routes/collectives.py).
  int reduce_scatter(uintptr_t send, uintptr_t recv, const std::vector<size_t>& counts, DType t, Op op,
                     uintptr_t stream, const std::vector<size_t>& displs = {});

  // Reachability check for real: an int64 SUM of every rank's `nonce` through the one-shot
  // kernel on a private stream, waited for. Throws CollectiveTimeout if a peer's stores never land.
  int64_t probe(int64_t nonce);
  // Raises CollectiveTimeout if a kernel of this communicator gave up waiting for a peer.
  void check();
  // Waits for the communicator's last stream, then check().
  void synchronize();
  // The time-out record a kernel wrote (code 0: none yet), copied: which rank waited for which
  // peer in which call (epoch). A caller that composes calls of several communicators names the
  // missing rank from it (hpcolls/hierarchy/node_steps.py).
  ErrorRecord error_record() const;
  // The device API's plain struct for this communicator on this rank (hpcolls/device/comm.h): the
  // LL scratch of every rank as mapped here, the device counters (one epoch sequence with the
  // host-launched kernels) and the error record that check() reads. The one implementation behind
  // Python's Communicator.device_comm(), the PMPI library's hpcolls_device_comm() and the C
  // entry's device_comm. Throws as a call would on a broken or unopened communicator (a time-out
  // seen: CollectiveTimeout), and std::invalid_argument in a diagnostic LL mode (the device API
  // runs mode 0 only).
  hpcolls_device_comm_t device_comm();
  uint32_t host_epoch() const { return calls_; }
  void release();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int device() const { return device_; }
  size_t scratch_bytes() const { return regions_[int(Protocol::LL)]->bytes(); }
  void* scratch_base(int r) const { return regions_[int(Protocol::LL)]->base(r); }
  // Rank r's base of protocol p's region as mapped here (nullptr: no such region).
  void* region_base(Protocol p, int r) const;
  int max_blocks() const { return in_.max_blocks; }
  // The largest one-shot call the small-message kernel takes at this rank count (0: none).
  size_t small_oneshot_max_bytes() const { return hpcolls::small_oneshot_max_bytes(in_); }

 private:
  cudaError_t launch(Kernel k, DType t, Op op, const CollectiveArgs& a) const;
  // What a kernel of protocol p receives: dev_ with p's region in place of the LL scratch (the
  // kernels address any region through DevComm::scratch and half_bytes alike); kept in
  // region_dev_, refreshed whenever dev_ or the regions change.
  const DevComm& dev_of(Protocol p) const;
  void refresh_region_devs();
  void check_reduction(const char* what, DType t, Op op) const;  // throws for a code or pair not carried
  void check_usable();  // throws for a broken or unopened communicator, or a time-out seen
  // The bookkeeping around every launch: epochs left, device, stream order, launch(), note it.
  template <typename Launch>
  void launch_call(const CollectiveArgs& a, Launch launch, const char* what);
  void order_before_launch(cudaStream_t s, StreamFacts& facts);
  void note_launch(cudaStream_t s, StreamFacts& facts);
  void wait_last_call();
  [[noreturn]] void raise_timeout();

  int rank_, nranks_, device_;
  std::unique_ptr<PeerScratch> regions_[kProtocols];  // [LL] always; the others where sized
  bool region_open_[kProtocols] = {};                 // every rank has the region: the protocol may run
  DeviceCounters* counters_ = nullptr;
  ErrorRecord* host_error_ = nullptr;        // host address
  ErrorRecord* host_error_dev_ = nullptr;    // its device address
  DevComm dev_{};
  DevComm region_dev_[kProtocols] = {};  // [Sentinel], [LL128]: dev_of()
  PlanInputs in_;  // what plan() decides from (plan.h)
  const DiagnosticLaunchers* diagnostic_ = nullptr;  // LL modes 1..3 (set_ll_mode)
  bool dependent_launch_supported_ = false;  // compute capability 9.0 or later
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
