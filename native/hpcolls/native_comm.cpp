#include "hpcolls/native_comm.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "hpcolls/collective_args.h"
#include "hpcolls/errors.h"
#include "hpcolls/runtime_info.h"
#include "hpcolls/sentinel_region.h"

namespace hpcolls {

namespace {
const char* algo_name(int a) { return a == int(Algo::OneShot) ? "one-shot" : "two-shot"; }
std::string upper(std::string s) {
  for (char& ch : s) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}
}  // namespace

NativeComm::NativeComm(int rank, int nranks, int device, size_t scratch_bytes, double timeout_s,
                       int ranks_on_device, size_t sentinel_bytes, size_t ll128_bytes)
    : rank_(rank), nranks_(nranks), device_(device) {
  require_device();
  if (nranks < 1 || nranks > kMaxRanks)
    throw std::invalid_argument("hpcolls: the native path supports 1.." + std::to_string(kMaxRanks) +
                                " ranks, not " + std::to_string(nranks));
  if (rank < 0 || rank >= nranks) throw std::invalid_argument("hpcolls: rank out of range");
  // Two halves, each a multiple of one LL chunk's lines. The kernels index a half, and the
  // messages that fit one, with 32-bit byte offsets (cheaper on the device than 64-bit ones).
  constexpr size_t kMaxScratchBytes = size_t(8) << 30;
  if (scratch_bytes > kMaxScratchBytes)
    throw std::invalid_argument("hpcolls: LL scratch of " + std::to_string(scratch_bytes) +
                                " bytes is over the 8 GiB the kernels can index (HPCOLLS_SCRATCH_BYTES; "
                                "a few MiB is enough: larger messages go to NCCL)");
  for (const size_t b : {sentinel_bytes, ll128_bytes})
    if (b > kMaxScratchBytes)
      throw std::invalid_argument("hpcolls: a protocol's scratch region of " + std::to_string(b) +
                                  " bytes is over the 8 GiB the kernels can index (HPCOLLS_SENTINEL_SCRATCH_BYTES, "
                                  "HPCOLLS_LL128_SCRATCH_BYTES)");
  scratch_bytes = std::max<size_t>(scratch_bytes, 4096) / 64 * 64;
  regions_[int(Protocol::LL)] = std::make_unique<PeerScratch>(device, scratch_bytes);
  // The other regions, zeroed as the LL one (a zero flag is never a live epoch); the sentinel
  // region's payload is then armed with the sentinel (sentinel_region.h). Two halves each, of
  // whole 16-byte lines.
  if (sentinel_bytes >= 4096) {
    regions_[int(Protocol::Sentinel)] = std::make_unique<PeerScratch>(device, sentinel_bytes / 64 * 64);
    cuda_check(arm_sentinel_region(regions_[int(Protocol::Sentinel)]->base(-1), sentinel_bytes / 64 * 32),
               "arm the sentinel region");
  }
  if (ll128_bytes >= 4096) regions_[int(Protocol::LL128)] = std::make_unique<PeerScratch>(device, ll128_bytes / 256 * 256);
  cuda_check(cudaMalloc(&counters_, sizeof(DeviceCounters)), "cudaMalloc(counters)");
  cuda_check(cudaMemset(counters_, 0, sizeof(DeviceCounters)), "cudaMemset(counters)");
  cuda_check(cudaHostAlloc(&host_error_, sizeof(ErrorRecord), cudaHostAllocMapped), "cudaHostAlloc(error record)");
  *host_error_ = ErrorRecord{};
  cuda_check(cudaHostGetDevicePointer(&host_error_dev_, host_error_, 0), "cudaHostGetDevicePointer");
  cuda_check(cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming), "cudaEventCreate");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(init)");

  int sms = 0;
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  // Blocks of a call wait on each other's peers, so all must be resident at once, also when
  // several ranks share the GPU (MPS): give each rank its share of the SMs.
  in_.max_blocks = std::max(1, std::min(64, sms / std::max(1, ranks_on_device)));
  in_.gpu_shared = ranks_on_device > 1;
  int major = 0;
  cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  dependent_launch_supported_ = major >= 9;
  dev_.next_may_start_early = !in_.gpu_shared;

  dev_.counters = counters_;
  dev_.host_error = host_error_dev_;
  dev_.half_bytes = scratch_bytes / 2;
  dev_.rank = rank;
  dev_.nranks = nranks;
  dev_.lane_shift = oneshot_lane_shift(nranks);
  in_.nranks = nranks;
  in_.half_bytes = dev_.half_bytes;
  set_timeout(timeout_s);
}

NativeComm::~NativeComm() { release(); }

void NativeComm::set_ll_mode(int mode, const DiagnosticLaunchers* launchers) {
  if (mode < 0 || mode >= kLLModes)
    throw std::invalid_argument("hpcolls: LL mode " + std::to_string(mode) + " is not one of 0.." +
                                std::to_string(kLLModes - 1) + " (native/include/hpcolls/ll_line.cuh)");
  if (mode != 0 && launchers == nullptr)
    throw std::invalid_argument("hpcolls: LL mode " + std::to_string(mode) + " needs the diagnostic module's kernels");
  dev_.ll_mode = in_.ll_mode = mode;
  diagnostic_ = mode == 0 ? nullptr : launchers;
  refresh_region_devs();
}

void NativeComm::set_threads_per_block(int threads) {
  // Whole warps: the one-shot kernel's lanes of a chunk share a warp, and its loops are warp-uniform.
  if (threads != 0 && (threads < 32 || threads > 1024 || threads % 32 != 0))
    throw std::invalid_argument("hpcolls: " + std::to_string(threads) +
                                " threads per block is not 0 (chosen per call) or a multiple of 32 up to 1024");
  in_.threads_override = threads;
}

void NativeComm::set_timeout(double seconds) {
  if (!(seconds > 0)) throw std::invalid_argument("hpcolls: the time-out must be positive seconds");
  dev_.timeout_ns = uint64_t(seconds * 1e9);
  refresh_region_devs();
}

std::string NativeComm::export_handle() const {
  std::string out;
  for (int p = 0; p < kProtocols; ++p) {
    out += regions_[p] ? '\1' : '\0';
    if (regions_[p]) out += regions_[p]->export_handle();
  }
  return out;
}

namespace {
// Splits one rank's export_handle() into its regions' handles ("" for an absent region).
std::vector<std::string> region_handles(const std::string& all, int rank) {
  std::vector<std::string> out;
  size_t at = 0;
  for (int p = 0; p < kProtocols; ++p) {
    if (at >= all.size()) throw CudaError("hpcolls: malformed scratch handles from rank " + std::to_string(rank));
    const bool present = all[at++] != '\0';
    const size_t n = present ? PeerScratch::kHandleBytes : 0;
    if (at + n > all.size()) throw CudaError("hpcolls: malformed scratch handles from rank " + std::to_string(rank));
    out.push_back(all.substr(at, n));
    at += n;
  }
  return out;
}
}  // namespace

void NativeComm::open_peers(const std::vector<std::string>& handles) {
  if (int(handles.size()) != nranks_) throw std::invalid_argument("hpcolls: one IPC handle per rank expected");
  std::vector<std::vector<std::string>> by_region(kProtocols, std::vector<std::string>(size_t(nranks_)));
  bool everywhere[kProtocols];
  for (int p = 0; p < kProtocols; ++p) everywhere[p] = true;
  for (int r = 0; r < nranks_; ++r) {
    const std::vector<std::string> mine = region_handles(handles[size_t(r)], r);
    for (int p = 0; p < kProtocols; ++p) {
      by_region[size_t(p)][size_t(r)] = mine[size_t(p)];
      everywhere[p] &= !mine[size_t(p)].empty();
    }
  }
  if (!everywhere[int(Protocol::LL)]) throw CudaError("hpcolls: a rank exported no LL scratch");
  for (int p = 0; p < kProtocols; ++p) {
    // The same handles on every rank, so every rank opens the same regions.
    region_open_[p] = everywhere[p] && regions_[p] != nullptr;
    if (region_open_[p]) regions_[p]->open_peers(by_region[size_t(p)], rank_);
  }
  for (int r = 0; r < nranks_; ++r) dev_.scratch[r] = regions_[int(Protocol::LL)]->base(r);
  in_.sentinel_half_bytes = region_bytes(Protocol::Sentinel) / 2;
  in_.ll128_half_bytes = region_bytes(Protocol::LL128) / 2;
  refresh_region_devs();
  peers_open_ = true;
}

size_t NativeComm::region_bytes(Protocol p) const {
  return region_open_[int(p)] ? regions_[int(p)]->bytes() : 0;
}

void* NativeComm::region_base(Protocol p, int r) const {
  return region_open_[int(p)] ? regions_[int(p)]->base(r) : nullptr;
}

const DevComm& NativeComm::dev_of(Protocol p) const { return p == Protocol::LL ? dev_ : region_dev_[int(p)]; }

void NativeComm::refresh_region_devs() {
  for (int p = 1; p < kProtocols; ++p) {
    DevComm& d = region_dev_[p];
    d = dev_;
    for (int r = 0; r < nranks_; ++r) d.scratch[r] = region_base(Protocol(p), r);
    d.half_bytes = region_bytes(Protocol(p)) / 2;
  }
}

void NativeComm::set_protocol(ProtocolMode p) {
  if (int(p) < -1 || int(p) >= kProtocols)
    throw std::invalid_argument("hpcolls: protocol " + std::to_string(int(p)) + " is not -1 (auto) or 0.." +
                                std::to_string(kProtocols - 1) + " (LL, sentinel, LL128)");
  in_.protocol = p;
}

int NativeComm::select(size_t bytes) const {
  const Plan p = plan_of(bytes, DType::U8, Op::Sum);  // the choice does not depend on the type
  return p.pieces == 1 ? int(algo_of(p.kernel)) : -1;
}

std::string NativeComm::kernel(size_t bytes) const {
  const Plan p = plan_of(bytes, DType::U8, Op::Sum);
  return p.pieces == 1 ? kernel_name(p.kernel) : "";
}

namespace {
// The legacy and per-thread default streams live as long as the context; any other stream is
// the caller's and may be destroyed after the call, so we never keep its handle.
bool builtin_stream(cudaStream_t s) {
  return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
}
}  // namespace

// What a call needs to know of its stream, each asked of the runtime at most once per call
// (ordering before the launch and bookkeeping after it both need them): whether it is being
// captured into a CUDA graph, and its ID, which unlike its handle is never reused by another
// stream ("unique for the life of the program", cudaStreamGetId), so it may be kept after the call.
class StreamFacts {
 public:
  explicit StreamFacts(cudaStream_t s) : s_(s) {}
  bool capturing() {
    if (capturing_ < 0) {
      cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
      cuda_check(cudaStreamIsCapturing(s_, &c), "cudaStreamIsCapturing");
      capturing_ = c != cudaStreamCaptureStatusNone;
    }
    return capturing_ != 0;
  }
  unsigned long long id() {  // not while capturing: the runtime refuses it then
    if (!have_id_) {
      cuda_check(cudaStreamGetId(s_, &id_), "cudaStreamGetId");
      have_id_ = true;
    }
    return id_;
  }

 private:
  cudaStream_t s_;
  int capturing_ = -1;
  bool have_id_ = false;
  unsigned long long id_ = 0;
};

void NativeComm::order_before_launch(cudaStream_t s, StreamFacts& facts) {
  // Calls on one communicator share scratch and epoch, so they must run in call order even when
  // the caller switches streams: the new stream waits for the last call (no host wait). Inside a
  // CUDA-graph capture the graph's own dependencies rule. A call on the stream of the last one
  // is in order already: the same handle is the same stream for a default stream, and for the
  // caller's own when its ID matches too (a destroyed stream's handle may be reused).
  if (last_ == LastCall::None || (last_ == LastCall::OnBuiltinStream && s == last_stream_)) return;
  if (facts.capturing()) return;
  if (last_ == LastCall::Recorded && facts.id() == last_stream_id_) return;
  if (last_ == LastCall::OnBuiltinStream)
    cuda_check(cudaEventRecord(order_event_, last_stream_), "cudaEventRecord");
  cuda_check(cudaStreamWaitEvent(s, order_event_, 0), "cudaStreamWaitEvent");
}

void NativeComm::note_launch(cudaStream_t s, StreamFacts& facts) {
  if (builtin_stream(s)) {
    last_ = LastCall::OnBuiltinStream;
    last_stream_ = s;
  } else if (facts.capturing()) {
    last_ = LastCall::None;  // ordered by the graph; its stream may not outlive the capture
  } else {
    cuda_check(cudaEventRecord(order_event_, s), "cudaEventRecord");
    last_ = LastCall::Recorded;
    last_stream_id_ = facts.id();
  }
}

void NativeComm::wait_last_call() {
  if (last_ == LastCall::OnBuiltinStream)
    cuda_check(cudaStreamSynchronize(last_stream_), "cudaStreamSynchronize");
  else if (last_ == LastCall::Recorded)
    cuda_check(cudaEventSynchronize(order_event_), "cudaEventSynchronize");
}

void NativeComm::check_usable() {
  if (broken_) throw CommunicatorBroken("hpcolls: communicator is broken (" + broken_why_ + "); create a new one");
  if (host_error_->code != 0) raise_timeout();
  if (!peers_open_) throw std::logic_error("hpcolls: open_peers() was not called");
}

template <typename Launch>
void NativeComm::launch_call(const CollectiveArgs& a, Launch launch, const char* what) {
  if (calls_ == UINT32_MAX - 1)
    throw CommunicatorBroken("hpcolls: this communicator used all 2^32-2 epochs of its LL flags; Dup() a new one");
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != device_) cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  StreamFacts facts(a.stream);
  order_before_launch(a.stream, facts);
  cuda_check(launch(), what);
  note_launch(a.stream, facts);
  ++calls_;
}

namespace {
CollectiveArgs args_of(const Plan& p, uintptr_t send, uintptr_t recv, size_t bytes, bool vec_ok, uintptr_t stream) {
  CollectiveArgs a;
  a.send = reinterpret_cast<const void*>(send);
  a.recv = reinterpret_cast<void*>(recv);
  a.bytes = bytes;
  a.vec_ok = vec_ok;
  a.threads = p.threads;
  a.blocks = p.blocks;
  a.stream = reinterpret_cast<cudaStream_t>(stream);
  a.dependent_launch = p.dependent_launch;
  return a;
}
}  // namespace

void NativeComm::check_reduction(const char* what, DType t, Op op) const {
  if (dtype_size(t) == 0) throw std::invalid_argument("hpcolls: unknown dtype code");
  if (int(op) < 0 || op >= Op::kCount) throw std::invalid_argument("hpcolls: unknown op code");
  if (!op_supported(t, op))
    throw std::invalid_argument(std::string("hpcolls: ") + what + ": MPI." + upper(op_name(op)) +
                                " is not defined for " + dtype_name(t) +
                                " (MPI: floating point takes SUM, PROD, MIN, MAX; complex SUM, "
                                "PROD; bool LAND, LOR, LXOR; integers every op)");
}

int NativeComm::allreduce(uintptr_t send, uintptr_t recv, size_t count, DType t, Op op, uintptr_t stream) {
  check_usable();
  check_reduction("Allreduce", t, op);
  const size_t bytes = count * dtype_size(t);
  if (bytes == 0) return int(in_.mode == AlgoMode::TwoShot ? Algo::TwoShot : Algo::OneShot);
  const Plan p = plan_of(bytes, t, op);
  if (p.pieces != 1) return -1;
  const size_t align = dtype_alignment(t);
  if (send % align || recv % align)
    throw std::invalid_argument("hpcolls: buffer address not aligned to its element type");
  const CollectiveArgs a = args_of(p, send, recv, bytes, send % 16 == 0 && recv % 16 == 0, stream);
  launch_call(a, [&] { return launch(p.kernel, t, op, a); },
              algo_of(p.kernel) == Algo::TwoShot ? "launch(allreduce two-shot)" : "launch(allreduce one-shot)");
  return int(algo_of(p.kernel));
}

int NativeComm::allgather(uintptr_t send, uintptr_t recv, size_t bytes, size_t stride, uintptr_t stream) {
  check_usable();
  if (stride == 0) stride = bytes;
  if (stride < bytes) throw std::invalid_argument("hpcolls: Allgather: the block stride is smaller than a block");
  if (bytes == 0) return 0;
  const Plan p = plan(in_, Collective::Allgather, bytes, DType::U8, Op::Sum);
  if (p.pieces != 1) return -1;
  const uintptr_t own = recv + uintptr_t(rank_) * stride;
  const uintptr_t recv_end = recv + uintptr_t(nranks_ - 1) * stride + bytes;
  if (send != own && send < recv_end && recv < send + bytes)
    throw std::invalid_argument("hpcolls: Allgather: the send buffer overlaps the receive buffer other than as its "
                                "own block (in place: send = recv + rank * stride)");
  CollectiveArgs a = args_of(p, send, recv, bytes, send % 16 == 0 && recv % 16 == 0 && stride % 16 == 0, stream);
  a.stride = stride;
  launch_call(a, [&] { return launch(p.kernel, DType::U8, Op::Sum, a); }, "launch(allgather one-shot)");
  return 0;
}

namespace {
void check_root(const char* what, int root, int nranks) {
  if (root < 0 || root >= nranks)
    throw std::invalid_argument(std::string("hpcolls: ") + what + ": root " + std::to_string(root) +
                                " is not a rank of this communicator (0.." + std::to_string(nranks - 1) + ")");
}
bool overlap(uintptr_t a, size_t a_bytes, uintptr_t b, size_t b_bytes) { return a < b + b_bytes && b < a + a_bytes; }
}  // namespace

int NativeComm::bcast(uintptr_t buf, size_t bytes, int root, uintptr_t stream) {
  check_usable();
  check_root("Bcast", root, nranks_);
  if (bytes == 0 || nranks_ == 1) return 0;  // nothing moves
  const Plan p = plan(in_, Collective::Bcast, bytes, DType::U8, Op::Sum);
  if (p.pieces != 1) return -1;
  CollectiveArgs a = args_of(p, buf, buf, bytes, buf % 16 == 0, stream);
  a.root = root;
  launch_call(a, [&] { return launch(p.kernel, DType::U8, Op::Sum, a); }, "launch(bcast one-shot)");
  return 0;
}

int NativeComm::reduce(uintptr_t send, uintptr_t recv, size_t count, DType t, Op op, int root, uintptr_t stream) {
  check_usable();
  check_reduction("Reduce", t, op);
  check_root("Reduce", root, nranks_);
  const size_t bytes = count * dtype_size(t);
  if (bytes == 0) return 0;
  const Plan p = plan(in_, Collective::Reduce, bytes, t, op);
  if (p.pieces != 1) return -1;
  const bool at_root = rank_ == root;
  const size_t align = dtype_alignment(t);
  if (send % align || (at_root && recv % align))
    throw std::invalid_argument("hpcolls: Reduce: buffer address not aligned to its element type");
  if (at_root && send != recv && overlap(send, bytes, recv, bytes))
    throw std::invalid_argument("hpcolls: Reduce: the send buffer overlaps the receive buffer (in place: send = recv)");
  CollectiveArgs a = args_of(p, send, at_root ? recv : send, bytes, send % 16 == 0 && (!at_root || recv % 16 == 0),
                             stream);
  a.root = root;
  launch_call(a, [&] { return launch(p.kernel, t, op, a); }, "launch(reduce one-shot)");
  return 0;
}

int NativeComm::reduce_scatter(uintptr_t send, uintptr_t recv, const std::vector<size_t>& counts, DType t, Op op,
                               uintptr_t stream, const std::vector<size_t>& displs) {
  check_usable();
  check_reduction("Reduce_scatter", t, op);
  if (int(counts.size()) != nranks_ || (!displs.empty() && int(displs.size()) != nranks_))
    throw std::invalid_argument("hpcolls: Reduce_scatter: " + std::to_string(counts.size()) + " counts and " +
                                std::to_string(displs.size()) + " displacements for " + std::to_string(nranks_) +
                                " ranks");
  const size_t esize = dtype_size(t);
  BlockLayout layout{};
  size_t next = 0, extent = 0, largest = 0;  // bytes: the next block's default offset, the span read
  for (int q = 0; q < nranks_; ++q) {
    const size_t offset = displs.empty() ? next : displs[size_t(q)] * esize;
    if (offset > UINT32_MAX) return -1;  // offsets are 32-bit in the kernel
    layout.offset[q] = uint32_t(offset);
    const size_t b = counts[size_t(q)] * esize;
    largest = std::max(largest, b);
    next = offset + b;
    extent = std::max(extent, next);
  }
  if (largest == 0) return 0;  // every block empty, on every rank
  const Plan p = plan(in_, Collective::ReduceScatter, largest, t, op);
  if (p.pieces != 1) return -1;
  for (int q = 0; q < nranks_; ++q) layout.bytes[q] = uint32_t(counts[size_t(q)] * esize);
  const bool in_place = send == recv;
  // In place the result (block rank's bytes) overwrites the input from its start: safe only inside
  // block 0, which the kernel reads chunk by chunk before each chunk's store. MPI has every rank in
  // place or none, so every rank declines alike.
  if (in_place && (layout.offset[0] != 0 || largest > layout.bytes[0])) return -1;
  const size_t align = dtype_alignment(t);
  if (send % align || recv % align)
    throw std::invalid_argument("hpcolls: Reduce_scatter: buffer address not aligned to its element type");
  if (!in_place && overlap(send, extent, recv, layout.bytes[rank_]))
    throw std::invalid_argument("hpcolls: Reduce_scatter: the send buffer overlaps the receive buffer (in place: "
                                "send = recv)");
  CollectiveArgs a = args_of(p, send, recv, largest, false, stream);  // the kernel aligns per block
  a.layout = &layout;
  launch_call(a, [&] { return launch(p.kernel, t, op, a); }, "launch(reduce_scatter one-shot)");
  return 0;
}

cudaError_t NativeComm::launch(Kernel k, DType t, Op op, const CollectiveArgs& a) const {
  if (diagnostic_ != nullptr)  // a diagnostic LL mode: never the small-message kernel (plan.cpp)
    return (k == Kernel::AllreduceTwoShot ? diagnostic_->twoshot : diagnostic_->oneshot)(dev_, t, op, a);
  switch (k) {
    case Kernel::AllreduceOneShotSmall: return launch_allreduce_oneshot_small(dev_, t, op, a);
    case Kernel::AllreduceOneShot: return launch_allreduce_oneshot(dev_, t, op, a);
    case Kernel::AllreduceTwoShot: return launch_allreduce_twoshot(dev_, t, op, a);
    case Kernel::ReduceOneShot: return launch_reduce_oneshot(dev_, t, op, a);
    case Kernel::ReduceScatterOneShot: return launch_reduce_scatter_oneshot(dev_, t, op, a);
    case Kernel::ReduceOneShotSmall: return launch_reduce_oneshot_small(dev_, t, op, a);
    case Kernel::ReduceScatterOneShotSmall: return launch_reduce_scatter_oneshot_small(dev_, t, op, a);
    case Kernel::AllgatherOneShot: return launch_allgather_oneshot(dev_, a);
    case Kernel::AllgatherOneShotSmall: return launch_allgather_oneshot_small(dev_, a);
    case Kernel::BcastOneShot: return launch_bcast_oneshot(dev_, a);
    case Kernel::BcastOneShotSmall: return launch_bcast_oneshot_small(dev_, a);
    case Kernel::AllreduceOneShotSentinel:
      return launch_allreduce_oneshot_sentinel(dev_of(Protocol::Sentinel), t, op, a);
    case Kernel::AllreduceTwoShotSentinel:
      return launch_allreduce_twoshot_sentinel(dev_of(Protocol::Sentinel), t, op, a);
    case Kernel::AllgatherOneShotSentinel: return launch_allgather_oneshot_sentinel(dev_of(Protocol::Sentinel), a);
    case Kernel::BcastOneShotSentinel: return launch_bcast_oneshot_sentinel(dev_of(Protocol::Sentinel), a);
    case Kernel::AllreduceOneShotLL128: return launch_allreduce_oneshot_ll128(dev_of(Protocol::LL128), t, op, a);
    case Kernel::AllreduceTwoShotLL128: return launch_allreduce_twoshot_ll128(dev_of(Protocol::LL128), t, op, a);
    default: return cudaErrorInvalidValue;
  }
}

int64_t NativeComm::probe(int64_t nonce) {
  cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  int64_t* buf = nullptr;
  cudaStream_t s = nullptr;
  cuda_check(cudaMalloc(&buf, sizeof(int64_t)), "cudaMalloc(probe)");
  int64_t result = 0;
  try {
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate(probe)");
    cuda_check(cudaMemcpy(buf, &nonce, sizeof(nonce), cudaMemcpyHostToDevice), "cudaMemcpy(probe)");
    const AlgoMode saved = in_.mode;
    in_.mode = AlgoMode::OneShot;
    allreduce(uintptr_t(buf), uintptr_t(buf), 1, DType::I64, Op::Sum, uintptr_t(s));
    in_.mode = saved;
    synchronize();
    cuda_check(cudaMemcpy(&result, buf, sizeof(result), cudaMemcpyDeviceToHost), "cudaMemcpy(probe)");
    last_ = LastCall::None;  // the private stream dies here and the probe is complete
  } catch (...) {
    if (s) (void)cudaStreamDestroy(s);
    (void)cudaFree(buf);
    throw;
  }
  (void)cudaStreamDestroy(s);
  (void)cudaFree(buf);
  return result;
}

std::string NativeComm::ll128_probe_error(double write_s, double wait_s, size_t area_bytes) const {
  if (!peers_open_) return "open_peers() was not called";
  const size_t bytes = region_bytes(Protocol::LL128);
  if (bytes == 0) return "no LL128 region (HPCOLLS_LL128_SCRATCH_BYTES=0 on some rank)";
  if (area_bytes > bytes)
    return "an area of " + std::to_string(area_bytes) + " bytes is larger than this rank's LL128 region (" +
           std::to_string(bytes) + ")";
  return ll128_probe_arguments_error(size_t(nranks_), area_bytes, rank_, write_s, wait_s);
}

LL128ProbeReport NativeComm::probe_ll128(uint32_t tag, double write_s, double wait_s, size_t area_bytes) {
  const std::string bad = ll128_probe_error(write_s, wait_s, area_bytes);
  if (!bad.empty()) throw std::invalid_argument("hpcolls: LL128 probe: " + bad);
  // The probe's stores share the LL128 region with the kernels: no call of ours may be in flight
  // (the caller has also made sure no peer's is: hpcolls/ll128_probe.py).
  wait_last_call();
  std::vector<void*> areas(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) areas[size_t(r)] = region_base(Protocol::LL128, r);
  return run_ll128_probe(areas, area_bytes, rank_, device_, tag, write_s, wait_s);
}

void NativeComm::check() {
  if (host_error_ != nullptr && host_error_->code != 0 && !broken_) raise_timeout();
}

void NativeComm::synchronize() {
  wait_last_call();
  check();
}

ErrorRecord NativeComm::error_record() const {
  if (host_error_ == nullptr) return ErrorRecord{};
  const volatile ErrorRecord* r = host_error_;
  if (r->code == 0) return ErrorRecord{};  // code is written last: a set code means the rest is complete
  ErrorRecord copy;
  copy.code = r->code;
  copy.rank = r->rank;
  copy.peer = r->peer;
  copy.algo = r->algo;
  copy.epoch = r->epoch;
  copy.collective = r->collective;
  return copy;
}

hpcolls_device_comm_t NativeComm::device_comm() {
  check_usable();
  if (dev_.ll_mode != 0)
    throw std::invalid_argument("hpcolls: the device API runs LL mode 0 only; this communicator is in LL mode " +
                                std::to_string(dev_.ll_mode) + " (HPCOLLS_LL_MODE)");
  return static_cast<const device::Comm&>(dev_);  // the head of what our own kernels receive
}

void NativeComm::raise_timeout() {
  const volatile ErrorRecord* r = host_error_;
  const std::string why = "rank " + std::to_string(r->rank) + " timed out after " +
                          std::to_string(double(dev_.timeout_ns) / 1e9) + " s waiting for peer " +
                          std::to_string(r->peer) + " in " + collective_name(Collective(r->collective)) + " (" +
                          algo_name(r->algo) +
                          "), epoch " + std::to_string(r->epoch) +
                          ": a rank skipped or reordered a collective, or died";
  broken_ = true;
  broken_why_ = why;
  throw CollectiveTimeout("hpcolls: " + why + "; the communicator is now broken (HPCOLLS_TIMEOUT sets the limit)");
}

void NativeComm::release() {
  if (regions_[int(Protocol::LL)]) {
    try {
      wait_last_call();
    } catch (const CudaError&) {
      // Releasing anyway: the process is tearing down or the context is already gone.
    }
    for (auto& region : regions_) {
      if (region) region->release();
      region.reset();
    }
    for (bool& open : region_open_) open = false;
  }
  if (counters_) (void)cudaFree(counters_);
  if (host_error_) (void)cudaFreeHost(host_error_);
  if (order_event_) (void)cudaEventDestroy(order_event_);
  (void)cudaGetLastError();
  counters_ = nullptr;
  host_error_ = nullptr;
  order_event_ = nullptr;
  peers_open_ = false;
  broken_ = true;
  broken_why_ = "it was freed";
}

}  // namespace hpcolls
