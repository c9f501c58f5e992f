// Is the loaded MPI library CUDA-aware? The one implementation of hpcolls' rule: Python's
// hpcolls.staging.pmpi_library asks this library through hpcolls_mpi_cuda_aware, and the staging
// entry points ask it once, at their first buffer.
#pragma once

#include <cstddef>

// override_: -1 for none, else 0 or 1 (HPCOLLS_MPI_CUDA_AWARE as hpcolls.settings parses it).
// Returns 0 or 1, and writes how it was decided into how[how_size] (always terminated).
extern "C" __attribute__((visibility("default"))) int hpcolls_mpi_cuda_aware(int override_, char* how,
                                                                             std::size_t how_size);

namespace hpcolls_pmpi {

// The decision for this process, made at the first call (HPCOLLS_MPI_CUDA_AWARE read then from
// the environment) and kept: an MPI library does not become CUDA-aware while it runs.
bool mpi_is_cuda_aware();

}  // namespace hpcolls_pmpi
