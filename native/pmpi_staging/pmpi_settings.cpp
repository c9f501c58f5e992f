#include "pmpi_settings.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "hpcolls/plan.h"

namespace hpcolls_pmpi {
namespace {

std::string trimmed_lower(const char* text) {
  std::string s(text);
  while (!s.empty() && std::strchr(" \t\n", s.back())) s.pop_back();
  std::size_t start = s.find_first_not_of(" \t\n");
  s = start == std::string::npos ? "" : s.substr(start);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool parse_integer(const char* text, long long* out) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  while (end != nullptr && std::strchr(" \t\n", *end) && *end != '\0') ++end;
  if (errno != 0 || end == text || *end != '\0') return false;
  *out = v;
  return true;
}

PmpiSettings read() {
  PmpiSettings s;
  static char error[200];
  auto fail = [&](const char* name, const char* value, const char* want) {
    if (s.error == nullptr) {
      std::snprintf(error, sizeof error, "%s=%s is not %s", name, value, want);
      s.error = error;
    }
  };
  if (const char* v = std::getenv("HPCOLLS_TIMEOUT")) {
    char* end = nullptr;
    double t = std::strtod(v, &end);
    if (end == v || !(t > 0)) fail("HPCOLLS_TIMEOUT", v, "a positive number of seconds"); else s.timeout_s = t;
  }
  long long n = 0;
  if (const char* v = std::getenv("HPCOLLS_SCRATCH_BYTES")) {
    if (!parse_integer(v, &n) || n <= 0) fail("HPCOLLS_SCRATCH_BYTES", v, "a positive integer"); else s.scratch_bytes = std::size_t(n);
  }
  if (const char* v = std::getenv("HPCOLLS_ONESHOT_MAX_BYTES")) {
    if (!parse_integer(v, &n) || n < 0) fail("HPCOLLS_ONESHOT_MAX_BYTES", v, ">= 0"); else s.oneshot_max_bytes = n;
  }
  if (const char* v = std::getenv("HPCOLLS_TWOSHOT_MAX_BYTES")) {
    if (!parse_integer(v, &n) || n < 0) fail("HPCOLLS_TWOSHOT_MAX_BYTES", v, ">= 0"); else s.twoshot_max_bytes = n;
  }
  if (const char* v = std::getenv("HPCOLLS_DEPENDENT_LAUNCH")) {
    if (!parse_integer(v, &n)) fail("HPCOLLS_DEPENDENT_LAUNCH", v, "an integer"); else s.dependent_launch = n != 0;
  }
  if (const char* v = std::getenv("HPCOLLS_ALGO")) {
    const std::string a = trimmed_lower(v);
    if (a == "auto" || a == "nccl") s.algo = -1;
    else if (a == "oneshot") s.algo = 0;
    else if (a == "twoshot") s.algo = 1;
    else if (a == "mpi") s.native = false;
    else fail("HPCOLLS_ALGO", v, "one of auto, oneshot, twoshot, nccl, mpi");
  }
  // The protocol regions as hpcolls/config.py bounds them (the kernels index at most 8 GiB).
  constexpr long long kMaxRegionBytes = 8ll << 30;
  if (const char* v = std::getenv("HPCOLLS_SENTINEL_SCRATCH_BYTES")) {
    if (!parse_integer(v, &n) || n < 0 || n > kMaxRegionBytes) fail("HPCOLLS_SENTINEL_SCRATCH_BYTES", v, "0..8 GiB");
    else s.sentinel_scratch_bytes = std::size_t(n);
  }
  if (const char* v = std::getenv("HPCOLLS_LL128_SCRATCH_BYTES")) {
    if (!parse_integer(v, &n) || n < 0 || n > kMaxRegionBytes) fail("HPCOLLS_LL128_SCRATCH_BYTES", v, "0..8 GiB");
    else s.ll128_scratch_bytes = std::size_t(n);
  }
  if (const char* v = std::getenv("HPCOLLS_LL128_PROBE_MS")) {
    if (!parse_integer(v, &n) || n < 0) fail("HPCOLLS_LL128_PROBE_MS", v, ">= 0"); else s.ll128_probe_ms = n;
  }
  if (const char* v = std::getenv("HPCOLLS_PROTOCOL")) {
    const std::string p = trimmed_lower(v);
    if (p == "auto") s.protocol = -1;
    else if (p == "ll") s.protocol = 0;
    else if (p == "sentinel") s.protocol = 1;
    else if (p == "ll128") s.protocol = 2;
    else fail("HPCOLLS_PROTOCOL", v, "one of auto, ll, sentinel, ll128");
  }
  if (const char* v = std::getenv("HPCOLLS_PMPI_WAIT")) {
    const std::string w = trimmed_lower(v);
    if (w == "flag") s.wait_on_flag = true;
    else if (w == "sync") s.wait_on_flag = false;
    else fail("HPCOLLS_PMPI_WAIT", v, "one of flag, sync");
  }
  if (const char* v = std::getenv("HPCOLLS_PMPI_RESIDENT_US")) {
    if (!parse_integer(v, &n) || n < 0 || n > 10000000) fail("HPCOLLS_PMPI_RESIDENT_US", v, "0..10000000 (microseconds)");
    else s.resident_us = n;
  }
  return s;
}

}  // namespace

const PmpiSettings& pmpi_settings() {
  static const PmpiSettings settings = read();
  return settings;
}

}  // namespace hpcolls_pmpi

extern "C" const char* hpcolls_pmpi_settings_defaults() {
  static char text[400];
  const hpcolls_pmpi::PmpiSettings d;
  std::snprintf(text, sizeof text,
                "HPCOLLS_TIMEOUT=%g HPCOLLS_SCRATCH_BYTES=%zu HPCOLLS_DEPENDENT_LAUNCH=%d HPCOLLS_ALGO=auto "
                "HPCOLLS_PMPI_WAIT=%s HPCOLLS_PROTOCOL=auto HPCOLLS_SENTINEL_SCRATCH_BYTES=%zu "
                "HPCOLLS_LL128_SCRATCH_BYTES=%zu HPCOLLS_LL128_PROBE_MS=%lld HPCOLLS_PMPI_RESIDENT_US=%lld",
                d.timeout_s, d.scratch_bytes, d.dependent_launch ? 1 : 0, d.wait_on_flag ? "flag" : "sync",
                d.sentinel_scratch_bytes, d.ll128_scratch_bytes, d.ll128_probe_ms, d.resident_us);
  return text;
}

extern "C" const char* hpcolls_pmpi_selection_table() {
  static const std::string text = [] {
    std::string out;
    std::size_t n = 0;
    const hpcolls::SelectionRow* rows = hpcolls::selection_table(&n);
    const auto bytes = [](std::size_t b) { return b == SIZE_MAX ? std::string("-1") : std::to_string(b); };
    for (std::size_t i = 0; i < n; ++i) {
      const hpcolls::SelectionRow& r = rows[i];
      out += std::string(hpcolls::collective_name(r.collective)) + " " + std::to_string(r.max_ranks) + " " +
             bytes(r.ll_max) + " " + bytes(r.ll128_max) + " " + bytes(r.ll_oneshot_max) + " " +
             bytes(r.sentinel_oneshot_max) + " " + bytes(r.native_max_vs_nccl) + "\n";
    }
    return out;
  }();
  return text.c_str();
}
