#include "device_comm.h"

#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "errors.h"
#include "hpcolls/errors.h"
#include "hpcolls/peer_scratch.h"
#include "hpcolls/stream_write.h"
#include "libmpi.h"
#include "mpi_abi.h"
#include "pmpi_settings.h"

namespace hpcolls_pmpi {
namespace {

using Allgather = int (*)(const void*, int, Handle, void*, int, Handle, Handle);
using Allreduce = int (*)(const void*, void*, int, Handle, Handle, Handle);

std::atomic<cudaStream_t> g_default_stream{cudaStreamLegacy};

// Attribute callbacks: a communicator made from this one (MPI_Comm_dup) gets no copy (it sets up
// its own); freeing the communicator frees its device state.
int no_copy(Handle, int, void*, void*, void*, int* flag) {
  *flag = 0;
  return kSuccess;
}
int free_state(Handle, int, void* value, void*) {
  delete static_cast<DeviceComm*>(value);
  return kSuccess;
}

int keyval() {
  static int key = -1;
  static std::once_flag once;
  static int error = kSuccess;
  std::call_once(once, [] {
    using Copy = int (*)(Handle, int, void*, void*, void*, int*);
    using Delete = int (*)(Handle, int, void*, void*);
    auto create = next<int (*)(Copy, Delete, int*, void*)>("PMPI_Comm_create_keyval");
    error = create != nullptr ? create(no_copy, free_state, &key, nullptr)
                              : error_code("the MPI library has no PMPI_Comm_create_keyval");
  });
  return error == kSuccess ? key : -1;
}

// One communicator looked up last (most programs use one): its handle and state, cleared when a
// state is freed.
std::atomic<Handle> g_last_comm{nullptr};
std::atomic<DeviceComm*> g_last_state{nullptr};

// The ranks bound to this rank's GPU beyond those of the communicator: the launcher's count of
// ranks on this node over the GPUs visible (the kernels size their grids to a rank's share of the
// SMs, hpcolls/peer_group.py's ranks_sharing_gpu).
int node_ranks_per_gpu() {
  int local = 0;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(name)) {
      local = std::atoi(v);
      if (local > 0) break;
    }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus <= 0) gpus = 1;
  return local > 0 ? (local + gpus - 1) / gpus : 1;
}

struct RankFacts {
  int usable;  // 1: this rank can take part
  int device;
  std::uint64_t host;  // hash of the host name
  char uuid[16];
};

std::uint64_t host_hash() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char* p = name; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  return h;
}

// Every rank's verdict, agreed: the smallest `ok` (1 yes, 0 no) over the communicator.
int agree(Handle comm, int ok, int* err) {
  static const auto allreduce = next<Allreduce>("PMPI_Allreduce");
  const MpiAbi* abi = mpi_abi();
  int all = 0;
  *err = allreduce(&ok, &all, 1, abi->int_, abi->op_min, comm);
  return all;
}

// LL128's torn-line probe and its agreed verdict, as hpcolls/ll128_probe.py runs them (read it for
// why): every rank skips unless every rank can probe; the ranks' last calls are waited for before
// any rank stores; LL128 is on only when every rank's run was complete and clean. The probe's own
// failures turn LL128 off and are never an error; MPI's are.
constexpr int kLL128MinPasses = 16;  // ll128_probe.MIN_PASSES: fewer proves nothing
constexpr double kLL128WaitS = 2.0;  // ll128_probe.WAIT_S

bool ll128_run_clean(const hpcolls::LL128ProbeReport& r) {
  return r.timed_out == 0 && r.torn == 0 && r.stale == 0 && r.min_iterations >= std::uint64_t(kLL128MinPasses) &&
         r.observed > 0;
}

int decide_ll128(Handle comm, int rank, hpcolls::NativeComm& nc, const PmpiSettings& settings) {
  static const auto allreduce = next<Allreduce>("PMPI_Allreduce");
  const MpiAbi* abi = mpi_abi();
  nc.set_ll128_available(false);
  const double write_s = double(settings.ll128_probe_ms) / 1e3;
  const std::size_t region = nc.region_bytes(hpcolls::Protocol::LL128);
  int ok = settings.ll128_probe_ms > 0 && nc.ll128_probe_error(write_s, kLL128WaitS, region).empty() ? 1 : 0;
  int err = kSuccess;
  if (agree(comm, ok, &err) != 1 || err != kSuccess) return err;
  // One tag for every rank, fresh per run (rank 0's; the others offer the largest value), and the
  // smallest rank's region as every rank's probe area.
  std::int64_t mine[2] = {rank == 0 ? std::int64_t(std::random_device{}() & 0x7fffffff) : INT64_MAX,
                          std::int64_t(region)};
  std::int64_t all[2] = {0, 0};
  err = allreduce(mine, all, 2, abi->int64, abi->op_min, comm);
  if (err != kSuccess) return err;
  try {
    nc.synchronize();
  } catch (const std::exception&) {
    ok = 0;
  }
  if (agree(comm, ok, &err) != 1 || err != kSuccess) return err;
  try {
    ok = ll128_run_clean(nc.probe_ll128(std::uint32_t(all[0]), write_s, kLL128WaitS, std::size_t(all[1]))) ? 1 : 0;
  } catch (const std::exception&) {
    ok = 0;
  }
  const bool on = agree(comm, ok, &err) == 1;
  if (err != kSuccess) return err;
  nc.set_ll128_available(on);
  return kSuccess;
}

// The set-up itself: every step agreed, so that no rank takes the native path alone.
int set_up(Handle comm, int device, DeviceComm* dc) {
  const PmpiSettings& settings = pmpi_settings();
  const MpiAbi* abi = mpi_abi();
  static const auto allgather = next<Allgather>("PMPI_Allgather");
  static const auto allreduce = next<Allreduce>("PMPI_Allreduce");
  auto comm_size = next<int (*)(Handle, int*)>("PMPI_Comm_size");
  auto comm_rank = next<int (*)(Handle, int*)>("PMPI_Comm_rank");
  int size = 0, rank = 0;
  int err = comm_size(comm, &size);
  if (err == kSuccess) err = comm_rank(comm, &rank);
  if (err != kSuccess) return err;
  dc->device = device;

  RankFacts mine{};
  mine.usable = settings.native && size <= hpcolls::kMaxRanks && device >= 0 ? 1 : 0;
  mine.device = device;
  mine.host = host_hash();
  cudaDeviceProp prop{};
  if (mine.usable && (cudaSetDevice(device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess))
    mine.usable = 0;
  std::memcpy(mine.uuid, prop.uuid.bytes, sizeof mine.uuid);
  std::vector<RankFacts> all(size);
  err = allgather(&mine, int(sizeof mine), abi->byte, all.data(), int(sizeof mine), abi->byte, comm);
  if (err != kSuccess) return err;
  int on_device = 0;
  bool usable = true, one_node = true;
  for (const RankFacts& f : all) {
    usable &= f.usable == 1;
    one_node &= f.host == all[0].host;
    on_device += std::memcmp(f.uuid, mine.uuid, sizeof mine.uuid) == 0;
  }
  if (!settings.native) dc->why_off = "HPCOLLS_ALGO=mpi";
  else if (!usable) dc->why_off = "a rank has no usable device, or more than 32 ranks";
  else if (!one_node) dc->why_off = "ranks span several nodes (the PMPI library has no hierarchical path yet)";
  if (!dc->why_off.empty()) return kSuccess;

  // Scratch and its CUDA IPC handle.
  std::string handle;
  int ok = 1;
  try {
    const int ranks_on_device = std::max(on_device, node_ranks_per_gpu());
    dc->native = std::make_unique<hpcolls::NativeComm>(rank, size, device, settings.scratch_bytes,
                                                       settings.timeout_s, ranks_on_device,
                                                       settings.sentinel_scratch_bytes, settings.ll128_scratch_bytes);
    dc->native->set_dependent_launch(settings.dependent_launch);
    handle = dc->native->export_handle();
  } catch (const std::exception& e) {
    dc->why_off = std::string("scratch allocation/export failed: ") + e.what();
    ok = 0;
  }
  // export_handle(): per protocol region a presence byte and, where present, its handle; padded
  // to the longest (every region present) so that one fixed-size allgather carries every rank's.
  const int handle_bytes = int(hpcolls::kProtocols * (1 + hpcolls::PeerScratch::kHandleBytes));
  handle.resize(handle_bytes);
  std::vector<char> handles(std::size_t(size) * handle_bytes);
  err = allgather(handle.data(), handle_bytes, abi->byte, handles.data(), handle_bytes, abi->byte, comm);
  if (err != kSuccess) return err;
  if (agree(comm, ok, &err) == 1 && err == kSuccess) {
    try {
      std::vector<std::string> peers;
      for (int r = 0; r < size; ++r) peers.emplace_back(handles.data() + std::size_t(r) * handle_bytes, handle_bytes);
      dc->native->open_peers(peers);
    } catch (const std::exception& e) {
      dc->why_off = std::string("opening peers' CUDA IPC handles failed: ") + e.what();
      ok = 0;
    }
    if (agree(comm, ok, &err) == 1 && err == kSuccess) {
      // Reachability for real: an int64 SUM of random nonces through the kernel itself.
      std::int64_t nonce = std::int64_t(std::random_device{}() & 0xffffff), expected = 0;
      err = allreduce(&nonce, &expected, 1, abi->int64, abi->op_sum, comm);
      if (err != kSuccess) return err;
      try {
        dc->native->set_timeout(std::min(settings.timeout_s, 5.0));
        const std::int64_t got = dc->native->probe(nonce);
        dc->native->set_timeout(settings.timeout_s);
        if (got != expected) {
          dc->why_off = "probe sum differs: peer stores are not visible";
          ok = 0;
        }
      } catch (const std::exception& e) {
        dc->why_off = std::string("probe failed: ") + e.what();
        ok = 0;
      }
    }
  }
  if (err == kSuccess && agree(comm, ok, &err) != 1) {
    if (dc->why_off.empty()) dc->why_off = "another rank could not set up the native path";
    dc->native.reset();
  }
  if (err != kSuccess) return err;
  if (dc->native) {
    // The plan's inputs as hpcolls/peer_group.py gives them: the table's limits unless overridden,
    // the protocol asked for, LL128 only where its probe agreed. No NCCL here: a message the
    // kernels decline goes to MPI, so the plan takes whole whatever fits (nccl_alternative off).
    if (settings.oneshot_max_bytes >= 0) dc->native->set_oneshot_max_bytes(size_t(settings.oneshot_max_bytes));
    if (settings.twoshot_max_bytes >= 0) dc->native->set_twoshot_max_bytes(size_t(settings.twoshot_max_bytes));
    dc->native->set_protocol(static_cast<hpcolls::ProtocolMode>(settings.protocol));
    dc->native->set_nccl_alternative(false);
    err = decide_ll128(comm, rank, *dc->native, settings);
    if (err != kSuccess) return err;
    dc->native->set_algo(static_cast<hpcolls::AlgoMode>(settings.algo));
    unsigned* done = nullptr;
    if (settings.wait_on_flag && cudaHostAlloc(reinterpret_cast<void**>(&done), sizeof *done, cudaHostAllocMapped) == cudaSuccess) {
      *done = 0;
      if (cudaHostGetDevicePointer(&dc->done_device, done, 0) == cudaSuccess) dc->done = done;
      else cudaFreeHost(done);
    }
    (void)cudaGetLastError();
  }
  return kSuccess;
}

}  // namespace

DeviceComm::~DeviceComm() {
  if (g_last_state.load() == this) {
    g_last_state.store(nullptr);
    g_last_comm.store(nullptr);
  }
  resident.reset();
  if (native) {
    try {
      native->synchronize();
    } catch (...) {
      // freeing after a time-out: nothing left to report
    }
    native->release();
  }
  if (done != nullptr) cudaFreeHost(const_cast<unsigned*>(done));
}

int device_comm(Handle comm, int device, DeviceComm** out) {
  *out = nullptr;
  if (const PmpiSettings& s = pmpi_settings(); s.error != nullptr) return error_codef("%s", s.error);
  if (mpi_abi() == nullptr) return error_code("the MPI library is neither Open MPI nor MPICH: no device path");
  DeviceComm* dc = g_last_comm.load() == comm ? g_last_state.load() : nullptr;
  if (dc == nullptr) {
    const int key = keyval();
    if (key < 0) return error_code("no attribute key for the device state");
    auto get = next<int (*)(Handle, int, void*, int*)>("PMPI_Comm_get_attr");
    int found = 0;
    void* value = nullptr;
    int err = get(comm, key, &value, &found);
    if (err != kSuccess) return err;
    if (found) {
      dc = static_cast<DeviceComm*>(value);
    } else {
      auto fresh = std::make_unique<DeviceComm>();
      err = set_up(comm, device, fresh.get());
      if (err != kSuccess) return err;
      auto set = next<int (*)(Handle, int, void*)>("PMPI_Comm_set_attr");
      err = set(comm, key, fresh.get());
      if (err != kSuccess) return err;
      dc = fresh.release();
    }
    g_last_state.store(dc);
    g_last_comm.store(comm);
  }
  if (dc->device != device)
    return error_codef("device buffers on GPU %d, but this communicator's device calls use GPU %d", device, dc->device);
  *out = dc;
  return kSuccess;
}

cudaStream_t call_stream(const DeviceComm& dc) { return dc.has_stream ? dc.stream : g_default_stream.load(); }

void set_default_stream(cudaStream_t stream) { g_default_stream.store(stream); }

void wait_for_call(DeviceComm& dc, cudaStream_t stream) {
  bool waited = false;
  if (dc.done != nullptr && hpcolls::stream_write_available()) {
    const unsigned mark = ++dc.calls;
    if (hpcolls::stream_write_u32(stream, dc.done_device, mark)) {  // after the kernel's memory writes
      // The kernel's own waits are bounded (HPCOLLS_TIMEOUT), so the flag comes; a host deadline
      // past theirs guards against a stream that never runs, and falls back to synchronizing.
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::duration<double>(pmpi_settings().timeout_s * 2 + 5);
      unsigned spins = 0;
      while (*dc.done != mark) {
        if ((++spins & 0xfff) == 0 && std::chrono::steady_clock::now() > deadline) break;
      }
      waited = *dc.done == mark;
    } else {
      dc.done = nullptr;  // stream memory operations refused: synchronize from now on
    }
  }
  if (!waited) hpcolls::cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  dc.native->check();
}

}  // namespace hpcolls_pmpi
