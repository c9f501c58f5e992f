// MPI's nonblocking collectives with device buffers: run as their blocking forms (the six through
// the native kernels or MPI, the others staged) and given a request that is already complete, as
// hpcolls/routes/mpi_staged.py completes mpi4py's staged nonblocking collectives. A staged buffer
// has no later point where its copy back could run (the completion calls MPI_Wait & co. name only
// the request), and the kernels' blocking form is a few µs. The price: the call returns only when
// every rank has made it, so a program that orders a nonblocking collective after a blocking call
// on one rank and before it on another waits for ever, as it would with MPI's blocking forms
// (docs/DROP_IN.md says so). Host buffers go to the PMPI_ entry unchanged, and so do device
// buffers of the collectives the kernels do not carry when MPI is CUDA-aware (nothing to stage).
#include <cstring>

#include "call_counter.h"
#include "completed_request.h"
#include "cuda_aware.h"
#include "device_collectives.h"
#include "device_memory.h"
#include "libmpi.h"
#include "mpi_opaque.h"
#include "staged_collectives.h"

using namespace hpcolls_pmpi;

namespace {

// The blocking call's result, and on success a completed request with a collective's empty status.
int completed(int err, void* request, const char* function) {
  if (err != kSuccess) return err;
  unsigned char empty_status[kStatusStorage];
  std::memset(empty_status, 0, sizeof empty_status);
  return start_completed_request(empty_status, request, function);
}

}  // namespace

HPCOLLS_PMPI_EXPORT int MPI_Iallreduce(const void* send, void* recv, int count, Handle type, Handle op, Handle comm,
                                       void* request) {
  static const auto pmpi = next<int (*)(const void*, void*, int, Handle, Handle, Handle, void*)>("PMPI_Iallreduce");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, recv, count, type, op, comm, request);
  return completed(device_allreduce(send, recv, count, type, op, comm, Launch{}), request, "MPI_Iallreduce");
}

HPCOLLS_PMPI_EXPORT int MPI_Ibcast(void* buf, int count, Handle type, int root, Handle comm, void* request) {
  static const auto pmpi = next<int (*)(void*, int, Handle, int, Handle, void*)>("PMPI_Ibcast");
  count_call();
  if (!locate(buf).on_device) return pmpi(buf, count, type, root, comm, request);
  return completed(device_bcast(buf, count, type, root, comm, Launch{}), request, "MPI_Ibcast");
}

HPCOLLS_PMPI_EXPORT int MPI_Ireduce(const void* send, void* recv, int count, Handle type, Handle op, int root,
                                    Handle comm, void* request) {
  static const auto pmpi = next<int (*)(const void*, void*, int, Handle, Handle, int, Handle, void*)>("PMPI_Ireduce");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, recv, count, type, op, root, comm, request);
  return completed(device_reduce(send, recv, count, type, op, root, comm, Launch{}), request, "MPI_Ireduce");
}

HPCOLLS_PMPI_EXPORT int MPI_Iallgather(const void* send, int scount, Handle stype, void* recv, int rcount,
                                       Handle rtype, Handle comm, void* request) {
  static const auto pmpi =
      next<int (*)(const void*, int, Handle, void*, int, Handle, Handle, void*)>("PMPI_Iallgather");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, scount, stype, recv, rcount, rtype, comm, request);
  return completed(device_allgather(send, scount, stype, recv, rcount, rtype, comm, Launch{}), request,
                   "MPI_Iallgather");
}

HPCOLLS_PMPI_EXPORT int MPI_Ireduce_scatter_block(const void* send, void* recv, int count, Handle type, Handle op,
                                                  Handle comm, void* request) {
  static const auto pmpi =
      next<int (*)(const void*, void*, int, Handle, Handle, Handle, void*)>("PMPI_Ireduce_scatter_block");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, recv, count, type, op, comm, request);
  return completed(device_reduce_scatter_block(send, recv, count, type, op, comm, Launch{}), request,
                   "MPI_Ireduce_scatter_block");
}

HPCOLLS_PMPI_EXPORT int MPI_Ireduce_scatter(const void* send, void* recv, const int* counts, Handle type, Handle op,
                                            Handle comm, void* request) {
  static const auto pmpi =
      next<int (*)(const void*, void*, const int*, Handle, Handle, Handle, void*)>("PMPI_Ireduce_scatter");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, recv, counts, type, op, comm, request);
  return completed(device_reduce_scatter(send, recv, counts, type, op, comm, Launch{}), request,
                   "MPI_Ireduce_scatter");
}

HPCOLLS_PMPI_EXPORT int MPI_Igather(const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                                    int root, Handle comm, void* request) {
  static const auto pmpi =
      next<int (*)(const void*, int, Handle, void*, int, Handle, int, Handle, void*)>("PMPI_Igather");
  count_call();
  if (!either_on_device(send, recv) || mpi_is_cuda_aware()) return pmpi(send, scount, stype, recv, rcount, rtype, root, comm, request);
  static const auto blocking = next<GatherFn>("PMPI_Gather");
  return completed(stage_gather(blocking, send, scount, stype, recv, rcount, rtype, root, comm), request,
                   "MPI_Igather");
}

HPCOLLS_PMPI_EXPORT int MPI_Igatherv(const void* send, int scount, Handle stype, void* recv, const int* rcounts,
                                     const int* displs, Handle rtype, int root, Handle comm, void* request) {
  static const auto pmpi = next<int (*)(const void*, int, Handle, void*, const int*, const int*, Handle, int, Handle,
                                        void*)>("PMPI_Igatherv");
  count_call();
  if (!either_on_device(send, recv) || mpi_is_cuda_aware())
    return pmpi(send, scount, stype, recv, rcounts, displs, rtype, root, comm, request);
  static const auto blocking = next<GathervFn>("PMPI_Gatherv");
  return completed(stage_gatherv(blocking, send, scount, stype, recv, rcounts, displs, rtype, root, comm), request,
                   "MPI_Igatherv");
}

HPCOLLS_PMPI_EXPORT int MPI_Iscatter(const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                                     int root, Handle comm, void* request) {
  static const auto pmpi =
      next<int (*)(const void*, int, Handle, void*, int, Handle, int, Handle, void*)>("PMPI_Iscatter");
  count_call();
  if (!either_on_device(send, recv) || mpi_is_cuda_aware()) return pmpi(send, scount, stype, recv, rcount, rtype, root, comm, request);
  static const auto blocking = next<ScatterFn>("PMPI_Scatter");
  return completed(stage_scatter(blocking, send, scount, stype, recv, rcount, rtype, root, comm), request,
                   "MPI_Iscatter");
}

HPCOLLS_PMPI_EXPORT int MPI_Iscatterv(const void* send, const int* scounts, const int* displs, Handle stype,
                                      void* recv, int rcount, Handle rtype, int root, Handle comm, void* request) {
  static const auto pmpi = next<int (*)(const void*, const int*, const int*, Handle, void*, int, Handle, int, Handle,
                                        void*)>("PMPI_Iscatterv");
  count_call();
  if (!either_on_device(send, recv) || mpi_is_cuda_aware())
    return pmpi(send, scounts, displs, stype, recv, rcount, rtype, root, comm, request);
  static const auto blocking = next<ScattervFn>("PMPI_Scatterv");
  return completed(stage_scatterv(blocking, send, scounts, displs, stype, recv, rcount, rtype, root, comm), request,
                   "MPI_Iscatterv");
}

HPCOLLS_PMPI_EXPORT int MPI_Iallgatherv(const void* send, int scount, Handle stype, void* recv, const int* rcounts,
                                        const int* displs, Handle rtype, Handle comm, void* request) {
  static const auto pmpi = next<int (*)(const void*, int, Handle, void*, const int*, const int*, Handle, Handle,
                                        void*)>("PMPI_Iallgatherv");
  count_call();
  if (!either_on_device(send, recv) || mpi_is_cuda_aware()) return pmpi(send, scount, stype, recv, rcounts, displs, rtype, comm, request);
  static const auto blocking = next<AllgathervFn>("PMPI_Allgatherv");
  return completed(stage_allgatherv(blocking, send, scount, stype, recv, rcounts, displs, rtype, comm), request,
                   "MPI_Iallgatherv");
}

HPCOLLS_PMPI_EXPORT int MPI_Ialltoall(const void* send, int scount, Handle stype, void* recv, int rcount,
                                      Handle rtype, Handle comm, void* request) {
  static const auto pmpi = next<int (*)(const void*, int, Handle, void*, int, Handle, Handle, void*)>("PMPI_Ialltoall");
  count_call();
  if (!either_on_device(send, recv) || mpi_is_cuda_aware()) return pmpi(send, scount, stype, recv, rcount, rtype, comm, request);
  static const auto blocking = next<AlltoallFn>("PMPI_Alltoall");
  return completed(stage_alltoall(blocking, send, scount, stype, recv, rcount, rtype, comm), request,
                   "MPI_Ialltoall");
}

HPCOLLS_PMPI_EXPORT int MPI_Ialltoallv(const void* send, const int* scounts, const int* sdispls, Handle stype,
                                       void* recv, const int* rcounts, const int* rdispls, Handle rtype, Handle comm,
                                       void* request) {
  static const auto pmpi = next<int (*)(const void*, const int*, const int*, Handle, void*, const int*, const int*,
                                        Handle, Handle, void*)>("PMPI_Ialltoallv");
  count_call();
  if (!either_on_device(send, recv) || mpi_is_cuda_aware())
    return pmpi(send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm, request);
  static const auto blocking = next<AlltoallvFn>("PMPI_Alltoallv");
  return completed(stage_alltoallv(blocking, send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm),
                   request, "MPI_Ialltoallv");
}

HPCOLLS_PMPI_EXPORT int MPI_Iscan(const void* send, void* recv, int count, Handle type, Handle op, Handle comm,
                                  void* request) {
  static const auto pmpi = next<int (*)(const void*, void*, int, Handle, Handle, Handle, void*)>("PMPI_Iscan");
  count_call();
  if (!either_on_device(send, recv) || mpi_is_cuda_aware()) return pmpi(send, recv, count, type, op, comm, request);
  static const auto blocking = next<ScanFn>("PMPI_Scan");
  return completed(stage_scan(blocking, "MPI_Iscan", send, recv, count, type, op, comm), request, "MPI_Iscan");
}

HPCOLLS_PMPI_EXPORT int MPI_Iexscan(const void* send, void* recv, int count, Handle type, Handle op, Handle comm,
                                    void* request) {
  static const auto pmpi = next<int (*)(const void*, void*, int, Handle, Handle, Handle, void*)>("PMPI_Iexscan");
  count_call();
  if (!either_on_device(send, recv) || mpi_is_cuda_aware()) return pmpi(send, recv, count, type, op, comm, request);
  static const auto blocking = next<ScanFn>("PMPI_Exscan");
  return completed(stage_scan(blocking, "MPI_Iexscan", send, recv, count, type, op, comm), request, "MPI_Iexscan");
}
