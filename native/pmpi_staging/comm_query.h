// What the entry points ask of a call's communicator and buffers, over PMPI: the communicator's
// size and this rank's place in it, and whether a buffer argument is MPI_IN_PLACE.
#pragma once

#include "libmpi.h"
#include "mpi_abi.h"
#include "mpi_opaque.h"

namespace hpcolls_pmpi {

// 0 (size) or -1 (rank) when MPI fails: the call then goes to MPI, which reports it.
inline int comm_size(Handle comm) {
  static const auto size_of = next<int (*)(Handle, int*)>("PMPI_Comm_size");
  int n = 0;
  return size_of(comm, &n) == kSuccess ? n : 0;
}
inline int comm_rank(Handle comm) {
  static const auto rank_of = next<int (*)(Handle, int*)>("PMPI_Comm_rank");
  int r = -1;
  return rank_of(comm, &r) == kSuccess ? r : -1;
}

inline bool in_place(const void* buf) {
  const MpiAbi* abi = mpi_abi();
  return abi != nullptr && buf == abi->in_place;
}

}  // namespace hpcolls_pmpi
