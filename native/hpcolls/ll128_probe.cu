// The torn-line probe's kernel and its host run (hpcolls/ll128_probe.h says what it proves).
//
// A rank's probe area: one control tile (512 bytes: started[r] at word r, written by reader r
// before it starts reading this rank's lines; done[w] at word kMaxRanks + w, written by writer w
// after its last pass), then a slot of lines_per_pair lines per writer rank. The kernel has one
// single-warp block per writer -> peer pair and one per reader <- peer pair, all resident at once
// (2 (N-1) warps; one rank: one writer and one reader on its own area).
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "hpcolls/device_clock.cuh"
#include "hpcolls/errors.h"
#include "hpcolls/ll128_line.cuh"
#include "hpcolls/ll128_probe.h"
#include "hpcolls/types.h"

namespace hpcolls {

namespace {

constexpr uint32_t kControlLines = kLL128TileLines;  // the control tile
constexpr uint32_t kTagBit = 0x80000000u;            // probe words never equal an epoch (< 2^32)
constexpr uint32_t kMaxPasses = 1u << 30;

struct ProbeCounts {  // device memory, zeroed before the launch; every warp adds its own
  unsigned long long iterations, min_iterations, observed, torn, stale, timed_out;
};

struct ProbeParams {
  LL128Line* area[kMaxRanks];  // each rank's probe area, as mapped in this process
  int rank, nranks;
  uint32_t lines;  // per pair, a multiple of kLL128TileLines
  uint32_t tag;    // bit 31 set
  uint64_t write_ns, wait_ns;
  ProbeCounts* counts;
};

__device__ uint64_t tagged(uint32_t tag, uint32_t value) { return (uint64_t(tag) << 32) | value; }
__device__ uint64_t* control_word(LL128Line* area, int index) { return &area[0].words[0] + index; }
__device__ LL128Line* slot_of(LL128Line* area, int writer, uint32_t lines) {
  return area + kControlLines + size_t(writer) * lines;
}

// The payload words this lane stores in (and expects of) tile `tile` of a slot in pass `pass`:
// distinct for every (pass, line, word), so that a line mixing two passes cannot pass the check.
// (tag, pass) times an odd constant is a bijection, so two passes differ in every word.
__device__ ulonglong2 pass_words(uint32_t tag, uint32_t pass, uint32_t tile) {
  const uint32_t lane = warp_lane();
  const uint64_t base = tagged(tag, pass) * 0x9E3779B97F4A7C15ull;
  const uint64_t where = (uint64_t(tile * kLL128TileLines + (lane >> 3)) << 4) | (2 * (lane & 7u));
  return make_ulonglong2(base ^ (where * 0xD6E8FEB86659FD93ull), base ^ ((where + 1) * 0xD6E8FEB86659FD93ull));
}

__device__ uint64_t load_relaxed(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ uint64_t load_acquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ void store_relaxed(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ void store_release(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Lane 0's value, on every lane: the warp's decisions are lane 0's, so the warp stays converged.
__device__ uint64_t from_lane0(uint64_t v) { return __shfl_sync(kFullWarp, v, 0); }

// Writes pass after pass into `peer`'s slot for this rank, once `peer`'s reader has said it reads.
__device__ void write_passes(const ProbeParams& p, int peer) {
  const uint32_t lane = warp_lane();
  const uint64_t* started = control_word(p.area[p.rank], peer);
  LL128Line* slot = slot_of(p.area[peer], p.rank, p.lines);
  const uint64_t begin = from_lane0(lane == 0 ? global_timer_ns() : 0);
  bool ready = false;
  while (true) {  // bounded: wait_ns
    const uint64_t seen = from_lane0(lane == 0 ? load_relaxed(started) : 0);
    ready = seen == tagged(p.tag, 1);
    if (ready || from_lane0(lane == 0 ? global_timer_ns() : 0) - begin > p.wait_ns) break;
  }
  uint32_t pass = 0;
  if (ready) {
    const uint64_t t0 = from_lane0(lane == 0 ? global_timer_ns() : 0);
    do {
      ++pass;
#pragma unroll 1
      for (uint32_t tile = 0; tile < p.lines / kLL128TileLines; ++tile)
        LL128Packet::write(slot + tile * kLL128TileLines, pass_words(p.tag, pass, tile), tagged(p.tag, pass));
    } while (from_lane0(lane == 0 ? global_timer_ns() : 0) - t0 < p.write_ns && pass < kMaxPasses);
  }
  // Every lane's stores before the word that says they are done: each lane's system fence, the
  // warp's barrier, then lane 0's release store.
  __threadfence_system();
  __syncwarp();
  if (lane == 0) {
    store_release(control_word(p.area[peer], kMaxRanks + p.rank), tagged(p.tag, pass));
    atomicAdd(&p.counts->iterations, (unsigned long long)pass);
    atomicMin(&p.counts->min_iterations, (unsigned long long)pass);
    if (!ready) atomicAdd(&p.counts->timed_out, 1ull);
  }
}

// Reads `writer`'s slot in this rank's area over and over until the writer is done, checking every
// line read; then once more, every line having to hold the last pass.
__device__ void read_passes(const ProbeParams& p, int writer) {
  const uint32_t lane = warp_lane();
  LL128Line* slot = slot_of(p.area[p.rank], writer, p.lines);
  const uint64_t* done = control_word(p.area[p.rank], kMaxRanks + writer);
  if (lane == 0) store_relaxed(control_word(p.area[writer], p.rank), tagged(p.tag, 1));
  const uint64_t deadline = from_lane0(lane == 0 ? global_timer_ns() : 0) + 2 * p.wait_ns + p.write_ns;
  unsigned long long observed = 0, torn = 0, stale = 0;  // lane 0's counts
  bool timed_out = false;
  while (true) {
    // Done is read before the pass (acquire): the pass after it sees every store of the last pass.
    const uint64_t said = from_lane0(lane == 0 ? load_acquire(done) : 0);
    const bool last = (said >> 32) == p.tag;
#pragma unroll 1
    for (uint32_t tile = 0; tile < p.lines / kLL128TileLines; ++tile) {
      const LL128Packet pk = LL128Packet::read(slot + tile * kLL128TileLines);
      const uint64_t flag = pk.line_flag();
      const bool ours = (flag >> 32) == p.tag;
      bool wrong = false;
      if (ours) {
        const ulonglong2 want = pass_words(p.tag, uint32_t(flag), tile);
        wrong = pk.words.x != want.x || (!ll128_flag_lane(lane) && pk.words.y != want.y);
      }
      const uint32_t wrong_lanes = __ballot_sync(kFullWarp, wrong);
      const uint32_t ours_lanes = __ballot_sync(kFullWarp, ours);
      const uint32_t behind_lanes = __ballot_sync(kFullWarp, last && flag != said);
      if (lane == 0) {
#pragma unroll
        for (uint32_t line = 0; line < kLL128TileLines; ++line) {
          const uint32_t group = 0xffu << (kLL128LanesPerLine * line);
          observed += (ours_lanes & group) != 0;
          torn += (wrong_lanes & group) != 0;
          stale += (behind_lanes & group) != 0;
        }
      }
    }
    if (last) break;
    if (from_lane0(lane == 0 ? global_timer_ns() : 0) > deadline) {
      timed_out = true;
      break;
    }
  }
  if (lane == 0) {
    atomicAdd(&p.counts->observed, observed);
    atomicAdd(&p.counts->torn, torn);
    atomicAdd(&p.counts->stale, stale);
    if (timed_out) atomicAdd(&p.counts->timed_out, 1ull);
  }
}

__global__ void ll128_probe_kernel(ProbeParams p) {
  const int pairs = p.nranks == 1 ? 1 : p.nranks - 1;
  const bool writer = int(blockIdx.x) < pairs;
  const int k = writer ? int(blockIdx.x) : int(blockIdx.x) - pairs;
  const int peer = p.nranks == 1 ? p.rank : (p.rank + 1 + k) % p.nranks;
  if (writer) write_passes(p, peer);
  else read_passes(p, peer);
}

}  // namespace

size_t ll128_probe_area_bytes(int nranks, uint32_t lines_per_pair) {
  return (kControlLines + size_t(nranks) * lines_per_pair) * kLL128LineBytes;
}

uint32_t ll128_probe_lines_per_pair(size_t area_bytes, int nranks) {
  if (nranks < 1 || area_bytes < ll128_probe_area_bytes(nranks, kLL128TileLines)) return 0;
  const size_t lines = (area_bytes / kLL128LineBytes - kControlLines) / size_t(nranks);
  const size_t capped = lines < kLL128ProbeMaxLines ? lines : kLL128ProbeMaxLines;
  return uint32_t(capped / kLL128TileLines * kLL128TileLines);
}

std::string ll128_probe_arguments_error(size_t nareas, size_t area_bytes, int rank, double write_s, double wait_s) {
  if (nareas < 1 || nareas > size_t(kMaxRanks))
    return "the probe takes 1.." + std::to_string(kMaxRanks) + " ranks' areas, not " + std::to_string(nareas);
  if (rank < 0 || size_t(rank) >= nareas)
    return "rank " + std::to_string(rank) + " is not one of 0.." + std::to_string(nareas - 1);
  if (!(write_s > 0 && write_s <= 1.0) || !std::isfinite(write_s))
    return "the write time must be in (0, 1] seconds, not " + std::to_string(write_s);
  if (!(wait_s > 0 && wait_s <= 10.0) || !std::isfinite(wait_s))
    return "the wait bound must be in (0, 10] seconds, not " + std::to_string(wait_s);
  if (ll128_probe_lines_per_pair(area_bytes, int(nareas)) == 0)
    return "an area of " + std::to_string(area_bytes) + " bytes holds no tile per pair at " + std::to_string(nareas) +
           " ranks (needs " + std::to_string(ll128_probe_area_bytes(int(nareas), kLL128TileLines)) + ")";
  return "";
}

LL128ProbeReport run_ll128_probe(const std::vector<void*>& areas, size_t area_bytes, int rank, int device,
                                 uint32_t tag, double write_s, double wait_s) {
  const std::string bad = ll128_probe_arguments_error(areas.size(), area_bytes, rank, write_s, wait_s);
  if (!bad.empty()) throw std::invalid_argument("hpcolls: LL128 probe: " + bad);
  for (void* a : areas)
    if (a == nullptr || reinterpret_cast<uintptr_t>(a) % kLL128LineBytes != 0)
      throw std::invalid_argument("hpcolls: LL128 probe: every area must be mapped and 128-byte aligned");

  ProbeParams p{};
  p.nranks = int(areas.size());
  p.rank = rank;
  for (int r = 0; r < p.nranks; ++r) p.area[r] = static_cast<LL128Line*>(areas[size_t(r)]);
  p.lines = ll128_probe_lines_per_pair(area_bytes, p.nranks);
  p.tag = tag | kTagBit;
  p.write_ns = uint64_t(write_s * 1e9);
  p.wait_ns = uint64_t(wait_s * 1e9);
  const int pairs = p.nranks == 1 ? 1 : p.nranks - 1;

  cuda_check(cudaSetDevice(device), "cudaSetDevice(LL128 probe)");
  cudaStream_t stream = nullptr;
  ProbeCounts* counts = nullptr;
  ProbeCounts host{};
  const auto cleanup = [&] {
    if (stream) (void)cudaStreamDestroy(stream);
    if (counts) (void)cudaFree(counts);
    (void)cudaGetLastError();
  };
  const auto t0 = std::chrono::steady_clock::now();
  try {
    cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate(LL128 probe)");
    cuda_check(cudaMalloc(&counts, sizeof(ProbeCounts)), "cudaMalloc(LL128 probe)");
    ProbeCounts zero{};
    zero.min_iterations = ~0ull;
    cuda_check(cudaMemcpyAsync(counts, &zero, sizeof(zero), cudaMemcpyHostToDevice, stream), "cudaMemcpy(LL128 probe)");
    p.counts = counts;
    ll128_probe_kernel<<<2 * pairs, 32, 0, stream>>>(p);
    cuda_check(cudaGetLastError(), "launch(LL128 probe)");
    cuda_check(cudaMemcpyAsync(&host, counts, sizeof(host), cudaMemcpyDeviceToHost, stream), "cudaMemcpy(LL128 probe)");
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(LL128 probe)");
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  LL128ProbeReport r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.lines_per_pair = p.lines;
  r.pairs = pairs;
  r.lines = uint64_t(pairs) * p.lines;
  r.iterations = host.iterations;
  r.min_iterations = host.min_iterations;
  r.observed = host.observed;
  r.torn = host.torn;
  r.stale = host.stale;
  r.timed_out = host.timed_out;
  return r;
}

}  // namespace hpcolls
