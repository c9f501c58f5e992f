// MPI's six collectives the native kernels carry, in front of the MPI library (LD_PRELOAD or
// linked before it). A call whose buffers are host memory goes to the PMPI_ entry at once, after
// the cheapest checks there are (device_memory.h: no driver in the process, or a page known as
// host memory); one whose buffers that matter are device memory goes to device_collectives.cpp.
// Which buffer decides, on every rank alike (MPI's rule: every rank passes the same kind of
// memory, as the Python layer requires too): the receive buffer, or the send buffer where a rank
// receives nothing (Reduce off the root) or it is the only one (Bcast).
#include "call_counter.h"
#include "device_collectives.h"
#include "device_memory.h"
#include "libmpi.h"
#include "mpi_opaque.h"

using namespace hpcolls_pmpi;

HPCOLLS_PMPI_EXPORT int MPI_Allreduce(const void* send, void* recv, int count, Handle datatype, Handle op,
                                      Handle comm) {
  static const auto pmpi = next<int (*)(const void*, void*, int, Handle, Handle, Handle)>("PMPI_Allreduce");
  count_call();
  if (!locate(recv).on_device && !locate(send).on_device) return pmpi(send, recv, count, datatype, op, comm);
  return device_allreduce(send, recv, count, datatype, op, comm, Launch{});
}

HPCOLLS_PMPI_EXPORT int MPI_Bcast(void* buf, int count, Handle datatype, int root, Handle comm) {
  static const auto pmpi = next<int (*)(void*, int, Handle, int, Handle)>("PMPI_Bcast");
  count_call();
  if (!locate(buf).on_device) return pmpi(buf, count, datatype, root, comm);
  return device_bcast(buf, count, datatype, root, comm, Launch{});
}

HPCOLLS_PMPI_EXPORT int MPI_Reduce(const void* send, void* recv, int count, Handle datatype, Handle op, int root,
                                   Handle comm) {
  static const auto pmpi = next<int (*)(const void*, void*, int, Handle, Handle, int, Handle)>("PMPI_Reduce");
  count_call();
  if (!locate(send).on_device && !locate(recv).on_device) return pmpi(send, recv, count, datatype, op, root, comm);
  return device_reduce(send, recv, count, datatype, op, root, comm, Launch{});
}

HPCOLLS_PMPI_EXPORT int MPI_Allgather(const void* send, int send_count, Handle send_type, void* recv,
                                      int recv_count, Handle recv_type, Handle comm) {
  static const auto pmpi = next<int (*)(const void*, int, Handle, void*, int, Handle, Handle)>("PMPI_Allgather");
  count_call();
  if (!locate(recv).on_device && !locate(send).on_device)
    return pmpi(send, send_count, send_type, recv, recv_count, recv_type, comm);
  return device_allgather(send, send_count, send_type, recv, recv_count, recv_type, comm, Launch{});
}

HPCOLLS_PMPI_EXPORT int MPI_Reduce_scatter_block(const void* send, void* recv, int recv_count, Handle datatype,
                                                 Handle op, Handle comm) {
  static const auto pmpi =
      next<int (*)(const void*, void*, int, Handle, Handle, Handle)>("PMPI_Reduce_scatter_block");
  count_call();
  if (!locate(recv).on_device && !locate(send).on_device) return pmpi(send, recv, recv_count, datatype, op, comm);
  return device_reduce_scatter_block(send, recv, recv_count, datatype, op, comm, Launch{});
}

HPCOLLS_PMPI_EXPORT int MPI_Reduce_scatter(const void* send, void* recv, const int* recv_counts, Handle datatype,
                                           Handle op, Handle comm) {
  static const auto pmpi = next<int (*)(const void*, void*, const int*, Handle, Handle, Handle)>("PMPI_Reduce_scatter");
  count_call();
  if (!locate(recv).on_device && !locate(send).on_device) return pmpi(send, recv, recv_counts, datatype, op, comm);
  return device_reduce_scatter(send, recv, recv_counts, datatype, op, comm, Launch{});
}
