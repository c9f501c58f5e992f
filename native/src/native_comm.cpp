#include "hpcolls/native_comm.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "hpcolls/collective_args.h"
#include "hpcolls/errors.h"
#include "hpcolls/runtime_info.h"

namespace hpcolls {

namespace {
const char* algo_name(int a) { return a == int(Algo::OneShot) ? "one-shot" : "two-shot"; }
std::string upper(std::string s) {
  for (char& ch : s) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}
}  // namespace

NativeComm::NativeComm(int rank, int nranks, int device, size_t scratch_bytes, double timeout_s,
                       int ranks_on_device)
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
  scratch_bytes = std::max<size_t>(scratch_bytes, 4096) / 64 * 64;
  scratch_ = std::make_unique<PeerScratch>(device, scratch_bytes);
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
  max_blocks_ = std::max(1, std::min(64, sms / std::max(1, ranks_on_device)));
  gpu_shared_ = ranks_on_device > 1;
  int major = 0;
  cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  dependent_launch_supported_ = major >= 9;

  dev_.counters = counters_;
  dev_.host_error = host_error_dev_;
  dev_.half_bytes = scratch_bytes / 2;
  dev_.rank = rank;
  dev_.nranks = nranks;
  dev_.lane_shift = oneshot_lane_shift(nranks);
  set_timeout(timeout_s);
}

NativeComm::~NativeComm() { release(); }

void NativeComm::set_ll_mode(int mode, const DiagnosticLaunchers* launchers) {
  if (mode < 0 || mode >= kLLModes)
    throw std::invalid_argument("hpcolls: LL mode " + std::to_string(mode) + " is not one of 0.." +
                                std::to_string(kLLModes - 1) + " (native/include/hpcolls/ll_line.cuh)");
  if (mode != 0 && launchers == nullptr)
    throw std::invalid_argument("hpcolls: LL mode " + std::to_string(mode) + " needs the diagnostic module's kernels");
  dev_.ll_mode = mode;
  diagnostic_ = mode == 0 ? nullptr : launchers;
}

void NativeComm::set_threads_per_block(int threads) {
  // Whole warps: the one-shot kernel's lanes of a chunk share a warp, and its loops are warp-uniform.
  if (threads != 0 && (threads < 32 || threads > 1024 || threads % 32 != 0))
    throw std::invalid_argument("hpcolls: " + std::to_string(threads) +
                                " threads per block is not 0 (chosen per call) or a multiple of 32 up to 1024");
  threads_override_ = threads;
}

void NativeComm::set_timeout(double seconds) {
  if (!(seconds > 0)) throw std::invalid_argument("hpcolls: the time-out must be positive seconds");
  dev_.timeout_ns = uint64_t(seconds * 1e9);
}

void NativeComm::open_peers(const std::vector<std::string>& handles) {
  if (int(handles.size()) != nranks_) throw std::invalid_argument("hpcolls: one IPC handle per rank expected");
  scratch_->open_peers(handles, rank_);
  for (int r = 0; r < nranks_; ++r) dev_.scratch[r] = scratch_->base(r);
  peers_open_ = true;
}

size_t NativeComm::max_bytes(Algo algo) const {
  // Inverse of {oneshot,twoshot}_half_bytes, rounded down to whole chunks.
  const size_t half = dev_.half_bytes;
  const size_t line_bytes = kLinesPerChunk * 16;
  if (algo == Algo::OneShot) return half / (size_t(nranks_) * line_bytes) * kChunkBytes;
  return half / (2 * size_t(nranks_) * line_bytes) * size_t(nranks_) * kChunkBytes;
}

int NativeComm::select(size_t bytes) const {
  const bool fits1 = oneshot_half_bytes(bytes, nranks_) <= dev_.half_bytes;
  const bool fits2 = twoshot_half_bytes(bytes, nranks_) <= dev_.half_bytes;
  switch (mode_) {
    case AlgoMode::OneShot: return fits1 ? int(Algo::OneShot) : -1;
    case AlgoMode::TwoShot: return fits2 ? int(Algo::TwoShot) : -1;
    default:
      if (fits1 && (bytes <= oneshot_max_bytes_ || nranks_ == 1)) return int(Algo::OneShot);
      if (fits2 && bytes <= twoshot_max_bytes_) return int(Algo::TwoShot);
      return -1;
  }
}

size_t NativeComm::largest_message() const {
  const size_t one = max_bytes(Algo::OneShot), two = max_bytes(Algo::TwoShot);
  switch (mode_) {  // as select() decides
    case AlgoMode::OneShot: return one;
    case AlgoMode::TwoShot: return two;
    default:
      if (nranks_ == 1) return one;
      // Whole chunks: the thresholds need not be (one and two are).
      return std::max(std::min(one, oneshot_max_bytes_), std::min(two, twoshot_max_bytes_)) / kChunkBytes *
             kChunkBytes;
  }
}

std::string NativeComm::kernel(size_t bytes) const {
  const int algo = select(bytes);
  if (algo < 0) return "";
  if (algo == int(Algo::TwoShot)) return "two-shot";
  return small_kernel((bytes + kChunkBytes - 1) / kChunkBytes) ? "one-shot (small-message kernel)" : "one-shot";
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

int NativeComm::allreduce(uintptr_t send, uintptr_t recv, size_t count, DType t, Op op, uintptr_t stream) {
  if (broken_) throw CommunicatorBroken("hpcolls: communicator is broken (" + broken_why_ + "); create a new one");
  if (host_error_->code != 0) raise_timeout();
  if (!peers_open_) throw std::logic_error("hpcolls: open_peers() was not called");
  const size_t esize = dtype_size(t);
  if (esize == 0) throw std::invalid_argument("hpcolls: unknown dtype code");
  if (int(op) < 0 || op >= Op::kCount) throw std::invalid_argument("hpcolls: unknown op code");
  if (!op_supported(t, op))
    throw std::invalid_argument("hpcolls: Allreduce: MPI." + upper(op_name(op)) + " is not defined for " +
                                dtype_name(t) + " (MPI: floating point takes SUM, PROD, MIN, MAX; complex SUM, "
                                "PROD; bool LAND, LOR, LXOR; integers every op)");
  const size_t bytes = count * esize;
  if (bytes == 0) return int(mode_ == AlgoMode::TwoShot ? Algo::TwoShot : Algo::OneShot);
  const int algo = select(bytes);
  if (algo < 0) return -1;
  const size_t align = dtype_alignment(t);
  if (send % align || recv % align)
    throw std::invalid_argument("hpcolls: buffer address not aligned to its element type");
  if (calls_ == UINT32_MAX - 1)
    throw CommunicatorBroken("hpcolls: this communicator used all 2^32-2 epochs of its LL flags; Dup() a new one");

  AllreduceArgs a;
  a.send = reinterpret_cast<const void*>(send);
  a.recv = reinterpret_cast<void*>(recv);
  a.bytes = bytes;
  a.vec_ok = (send % 16 == 0) && (recv % 16 == 0);
  const size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  const bool small = algo == int(Algo::OneShot) && small_kernel(chunks);
  const size_t items = algo == int(Algo::OneShot) && !small ? chunks << dev_.lane_shift : chunks;  // threads with work
  a.threads = items >= size_t(kThreadsPerBlock) ? kThreadsPerBlock : int((items + 31) / 32 * 32);
  if (threads_override_ > 0) a.threads = threads_override_;
  a.blocks = int(std::min<size_t>(max_blocks_, (items + a.threads - 1) / a.threads));
  a.stream = reinterpret_cast<cudaStream_t>(stream);
  // A dependent grid starts, and holds its blocks' SM slots, while the call before it still
  // runs: two grids of this rank resident at once. Ranks sharing the GPU (MPS) each have a share
  // of the SMs (max_blocks_) sized for one grid; with two grids of a full share waiting on every
  // rank but a late one, their blocks filled the SMs that rank's own kernels needed before it
  // joined (time-outs behind the solver's kernels at 4 ranks on one H200, docs/PERFORMANCE.md).
  // So where the GPU is shared, only a grid of at most half the share is launched as a dependent:
  // two of them hold no more than one grid did before dependent launch.
  a.dependent_launch = dependent_launch_ && (!gpu_shared_ || 2 * a.blocks <= max_blocks_);

  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != device_) cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  StreamFacts facts(a.stream);
  order_before_launch(a.stream, facts);
  const cudaError_t err = diagnostic_ != nullptr   ? (algo == int(Algo::OneShot) ? diagnostic_->oneshot
                                                                                  : diagnostic_->twoshot)(dev_, t, op, a)
                          : small                       ? launch_allreduce_oneshot_small(dev_, t, op, a)
                          : algo == int(Algo::OneShot) ? launch_allreduce_oneshot(dev_, t, op, a)
                                                       : launch_allreduce_twoshot(dev_, t, op, a);
  cuda_check(err, algo == int(Algo::OneShot) ? "launch(allreduce one-shot)" : "launch(allreduce two-shot)");
  note_launch(a.stream, facts);
  ++calls_;
  return algo;
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
    const AlgoMode saved = mode_;
    mode_ = AlgoMode::OneShot;
    allreduce(uintptr_t(buf), uintptr_t(buf), 1, DType::I64, Op::Sum, uintptr_t(s));
    mode_ = saved;
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

void NativeComm::check() {
  if (host_error_ != nullptr && host_error_->code != 0 && !broken_) raise_timeout();
}

void NativeComm::synchronize() {
  wait_last_call();
  check();
}

void NativeComm::raise_timeout() {
  const volatile ErrorRecord* r = host_error_;
  const std::string why = "rank " + std::to_string(r->rank) + " timed out after " +
                          std::to_string(double(dev_.timeout_ns) / 1e9) + " s waiting for peer " +
                          std::to_string(r->peer) + " in allreduce (" + algo_name(r->algo) +
                          "), epoch " + std::to_string(r->epoch) +
                          ": a rank skipped or reordered a collective, or died";
  broken_ = true;
  broken_why_ = why;
  throw CollectiveTimeout("hpcolls: " + why + "; the communicator is now broken (HPCOLLS_TIMEOUT sets the limit)");
}

void NativeComm::release() {
  if (scratch_) {
    try {
      wait_last_call();
    } catch (const CudaError&) {
      // Releasing anyway: the process is tearing down or the context is already gone.
    }
    scratch_->release();
    scratch_.reset();
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
