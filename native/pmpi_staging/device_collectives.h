// MPI's six collectives on device buffers: the native kernels through the communicator's
// NativeComm when its plan takes the call (predefined types and ops, a message the kernels carry,
// ranks that reach each other's memory), MPI otherwise, staged through host memory when MPI is not
// CUDA-aware. Called by the entry points (collective_entry_points.cpp) once a buffer that matters
// is device memory, and by the stream-enqueued C API (enqueue.cpp) with enqueue = true (no host
// wait, no MPI fallback).
#pragma once

#include <cuda_runtime.h>

#include "mpi_opaque.h"

namespace hpcolls_pmpi {

// How a call reaches the kernels: on the communicator's stream and waited for by the host
// (MPI's blocking semantics), or enqueued on `stream` (the enqueue API) without a host wait.
struct Launch {
  bool enqueue = false;
  cudaStream_t stream = nullptr;
};

int device_allreduce(const void* send, void* recv, int count, Handle datatype, Handle op, Handle comm,
                     const Launch& how);
int device_bcast(void* buf, int count, Handle datatype, int root, Handle comm, const Launch& how);
int device_reduce(const void* send, void* recv, int count, Handle datatype, Handle op, int root, Handle comm,
                  const Launch& how);
int device_allgather(const void* send, int send_count, Handle send_type, void* recv, int recv_count,
                     Handle recv_type, Handle comm, const Launch& how);
int device_reduce_scatter_block(const void* send, void* recv, int recv_count, Handle datatype, Handle op,
                                Handle comm, const Launch& how);
int device_reduce_scatter(const void* send, void* recv, const int* recv_counts, Handle datatype, Handle op,
                          Handle comm, const Launch& how);

// An error code passed through the communicator's error handler (MPI_Comm_call_errhandler), as
// MPI itself reports an error of a call on it; returns the code.
int comm_error(Handle comm, int code);

}  // namespace hpcolls_pmpi
