// The HPCOLLS_* settings the PMPI library reads, with hpcolls/settings.py's names and defaults
// (tests/cpu/test_hpcolls_pmpi_settings.py checks that the defaults agree), read once per process.
#pragma once

#include <cstddef>

namespace hpcolls_pmpi {

struct PmpiSettings {
  double timeout_s = 10.0;                     // HPCOLLS_TIMEOUT
  std::size_t scratch_bytes = std::size_t(8) << 20;  // HPCOLLS_SCRATCH_BYTES
  long long oneshot_max_bytes = -1;            // HPCOLLS_ONESHOT_MAX_BYTES (-1: the selection table)
  long long twoshot_max_bytes = -1;            // HPCOLLS_TWOSHOT_MAX_BYTES
  int algo = -1;                               // HPCOLLS_ALGO: -1 auto (and nccl: no NCCL here), 0 one-shot, 1 two-shot
  bool native = true;                          // HPCOLLS_ALGO=mpi: every call to MPI
  bool dependent_launch = true;                // HPCOLLS_DEPENDENT_LAUNCH
  bool wait_on_flag = true;                    // HPCOLLS_PMPI_WAIT: flag (mapped flag) or sync
  long long resident_us = 0;                   // HPCOLLS_PMPI_RESIDENT_US: 0 off, else the resident kernel's idle life
  int protocol = -1;                           // HPCOLLS_PROTOCOL: -1 auto, else hpcolls::ProtocolMode (ll, sentinel, ll128)
  std::size_t sentinel_scratch_bytes = std::size_t(32) << 20;  // HPCOLLS_SENTINEL_SCRATCH_BYTES (0: protocol off)
  std::size_t ll128_scratch_bytes = std::size_t(16) << 20;     // HPCOLLS_LL128_SCRATCH_BYTES (0: protocol off)
  long long ll128_probe_ms = 10;               // HPCOLLS_LL128_PROBE_MS (0: no probe, LL128 off)
  const char* error = nullptr;                 // the first value that did not parse (the call fails with it)
};

const PmpiSettings& pmpi_settings();

}  // namespace hpcolls_pmpi

// "NAME=default ..." of the settings above, for the test that compares them with hpcolls/settings.py.
extern "C" __attribute__((visibility("default"))) const char* hpcolls_pmpi_settings_defaults();

// The selection table this library plans with (the plan's, hpcolls/plan.h), a line per row of
// "collective max_ranks ll_max ll128_max ll_oneshot_max sentinel_oneshot_max native_max_vs_nccl"
// (-1: no limit), for the test that it is the one Python reads.
extern "C" __attribute__((visibility("default"))) const char* hpcolls_pmpi_selection_table();
