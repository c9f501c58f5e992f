// The rule: HPCOLLS_MPI_CUDA_AWARE=0/1 overrides; else MPIX_Query_cuda_support() of the loaded MPI
// library (Open MPI's and MPICH's run-time query); else Cray MPICH's MPICH_GPU_SUPPORT_ENABLED=1;
// anything else is not CUDA-aware, and device buffers are staged through host memory (always
// safe, only slower).
#include "cuda_aware.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "libmpi.h"

namespace {

// The environment's override, parsed as hpcolls.settings' _tristate does: "0" or "1" around
// white space; anything else (or unset) is no override.
int override_from_environment() {
  const char* text = std::getenv("HPCOLLS_MPI_CUDA_AWARE");
  if (text == nullptr) return -1;
  while (*text == ' ' || *text == '\t' || *text == '\n') ++text;
  if (*text != '0' && *text != '1') return -1;
  const char* rest = text + 1;
  while (*rest == ' ' || *rest == '\t' || *rest == '\n') ++rest;
  return *rest == '\0' ? *text - '0' : -1;
}

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

}  // namespace

extern "C" int hpcolls_mpi_cuda_aware(int override_, char* how, std::size_t how_size) {
  char scratch[8];
  if (how == nullptr || how_size == 0) {
    how = scratch;
    how_size = sizeof scratch;
  }
  if (override_ == 0 || override_ == 1) {
    std::snprintf(how, how_size, "HPCOLLS_MPI_CUDA_AWARE=%d", override_);
    return override_;
  }
  using Query = int (*)();
  if (auto query = hpcolls_pmpi::next<Query>("MPIX_Query_cuda_support")) {
    std::snprintf(how, how_size, "MPIX_Query_cuda_support() in %s", base_name(hpcolls_pmpi::libmpi_path()));
    return query() != 0 ? 1 : 0;
  }
  const char* cray = std::getenv("MPICH_GPU_SUPPORT_ENABLED");
  if (cray != nullptr && std::strcmp(cray, "1") == 0) {
    std::snprintf(how, how_size, "MPICH_GPU_SUPPORT_ENABLED=1");
    return 1;
  }
  std::snprintf(how, how_size, "no CUDA-awareness query answered yes (set HPCOLLS_MPI_CUDA_AWARE=1 to override)");
  return 0;
}

namespace hpcolls_pmpi {

bool mpi_is_cuda_aware() {
  // Asked from inside an MPI call, so the MPI library is loaded and initialized by then.
  static const bool aware = hpcolls_mpi_cuda_aware(override_from_environment(), nullptr, 0) == 1;
  return aware;
}

}  // namespace hpcolls_pmpi
