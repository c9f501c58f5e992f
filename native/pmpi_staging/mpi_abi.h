// The loaded MPI library's predefined handles and constants, found at run time (no MPI header is
// compiled in: mpi_opaque.h). Open MPI's handles are the addresses of its exported objects
// (MPI_FLOAT is &ompi_mpi_float), looked up by name in the library, so Open MPI 4 and 5 both serve;
// MPICH's (and its derivatives', which keep MPICH's ABI) are fixed integers from its mpi.h.
#pragma once

#include "mpi_opaque.h"

namespace hpcolls_pmpi {

struct MpiAbi {
  const char* flavour;  // "Open MPI" or "MPICH"
  void* in_place;       // MPI_IN_PLACE
  void* status_ignore;  // MPI_STATUS_IGNORE
  void* statuses_ignore;  // MPI_STATUSES_IGNORE
  Handle byte, int_, int64, op_sum, op_min;
  Handle request_null;  // MPI_REQUEST_NULL
  int request_bytes;    // sizeof(MPI_Request): a pointer in Open MPI, an int in MPICH (request arrays)
  int err_other;        // MPI_ERR_OTHER
  // The Fortran MPI_IN_PLACE: the address of a common block (Open MPI) or null when unknown.
  void* fortran_in_place;
  // Whether MPI's Fortran entries reach the C MPI_ functions (MPICH: they convert handles and
  // MPI_IN_PLACE, then call MPI_Allreduce & co., where the C entry points take device buffers),
  // rather than PMPI_ or internal functions (Open MPI: the Fortran entry points take them).
  bool fortran_reaches_c;
};

// nullptr when no MPI library is loaded yet or it is neither Open MPI nor MPICH.
const MpiAbi* mpi_abi();

// What the kernels know of a predefined datatype: its element type (hpcolls::DType, or -1 for a
// type they only move as bytes) and its size in bytes; size 0: not a predefined type they take
// (derived types, pairs, MPI_PACKED, long double, ...), which go to MPI.
struct KnownType {
  int dtype = -1;
  int size = 0;
};
KnownType known_type(Handle datatype);

// hpcolls::Op of a predefined reduction operator, or -1 (user ops, MAXLOC, REPLACE, ...).
int known_op(Handle op);

}  // namespace hpcolls_pmpi
