// The torn-line probe: does this machine make an LL128 line (ll128_line.cuh) visible as one unit
// between the ranks of a communicator? A device microbenchmark that hunts for torn lines, run at a
// communicator's set-up (hpcolls/ll128_probe.py agrees the verdict over all ranks) and as a tool
// (tests/gpu/test_hpcolls_ll128_gpu.py, python -m hpcolls.tools.ll128_probe).
//
// Every rank writes lines into every peer's probe area and reads the lines every peer writes into
// its own (one rank alone: into its own area, from another SM), through the same CUDA IPC scratch
// and the same warp stores and loads as the LL128 kernels: under MPS that is two processes on one
// GPU, with a GPU per rank it is the link between them. A writer stores pass after pass over its
// lines, each pass's flag word (this run's tag, the pass number) with 15 payload words that are a
// function of (tag, pass, line, word); its reader polls the lines all the while, unsynchronized, so
// its loads race the stores, and checks every line it reads: a line whose flag says pass i but
// whose payload is not pass i's is torn. After the writer's last pass (it says so with a release
// store after a system fence) the reader reads every line once more, each of which must then hold
// the last pass. Every wait is bounded by the GPU clock; nothing is reported as a crash.
//
// Probe values never look like an epoch: every 8-byte word the probe stores where a flag word
// lives has its top bit set (the tag has bit 31 set), and epochs are below 2^32, so the LL128
// region needs no clearing after a probe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hpcolls {

// What one rank's probe saw (its writers' and its readers' counts summed).
struct LL128ProbeReport {
  uint64_t lines = 0;        // lines this rank read from its peers: pairs x lines_per_pair
  uint64_t iterations = 0;   // passes this rank's writers completed, summed over its peers
  uint64_t min_iterations = 0;  // the fewest passes any one writer of this rank completed
  uint64_t observed = 0;     // line reads that carried a flag of this run (the lines tested, with repeats)
  uint64_t torn = 0;         // of those, reads whose payload was not their flag's pass
  uint64_t stale = 0;        // lines that did not hold the writer's last pass after it said it was done
  uint64_t timed_out = 0;    // waits that passed their deadline (a peer never started or never finished)
  uint32_t lines_per_pair = 0;
  int pairs = 0;             // peers this rank wrote to (and read from); 1 on one rank (itself)
  double seconds = 0;        // wall time of the probe's kernel, host-measured
};

// Bytes of probe area a rank needs for `lines_per_pair` lines from each of `nranks` writers.
size_t ll128_probe_area_bytes(int nranks, uint32_t lines_per_pair);
// The most lines per pair (a multiple of 4, at most kLL128ProbeMaxLines) an area of `area_bytes`
// holds at `nranks` ranks; 0 when not even one tile fits.
uint32_t ll128_probe_lines_per_pair(size_t area_bytes, int nranks);
constexpr uint32_t kLL128ProbeMaxLines = 256;

// Runs the probe on `device` as rank `rank` of areas.size() ranks (areas[r]: rank r's probe area as
// mapped in this process, 128-byte aligned, area_bytes each), writers storing for `write_s`
// seconds, every wait bounded by `wait_s`. `tag`: the same on every rank, fresh for each run on the
// same areas (its bit 31 is set here). Collective: every rank must call it at about the same time
// (within wait_s). Throws std::invalid_argument for bad arguments (before any CUDA call) and
// CudaError when CUDA fails.
LL128ProbeReport run_ll128_probe(const std::vector<void*>& areas, size_t area_bytes, int rank, int device,
                                 uint32_t tag, double write_s, double wait_s);

// Checks run_ll128_probe's arguments without touching CUDA; the reason they are wrong, or "".
std::string ll128_probe_arguments_error(size_t nareas, size_t area_bytes, int rank, double write_s, double wait_s);

}  // namespace hpcolls
