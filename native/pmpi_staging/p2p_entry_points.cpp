// Point-to-point calls with device buffers, staged through host memory on an MPI that is not
// CUDA-aware (the coverage hpcolls/routes/mpi_staged.py gives mpi4py): blocking sends and
// receives copy around the call; nonblocking ones keep their host copies until the request
// completes (pending_requests.h), where a receive's bytes go back to the device buffer. Host
// buffers go to the PMPI_ entry after the cheap checks of device_memory.h (no CUDA driver in the
// process: two loads). Persistent requests (MPI_Send_init, ...) are not staged (DROP_IN.md).
#include <memory>

#include "call_counter.h"
#include "call_staging.h"
#include "device_memory.h"
#include "errors.h"
#include "libmpi.h"
#include "mpi_opaque.h"
#include "pending_requests.h"

using namespace hpcolls_pmpi;

namespace {

using Send = int (*)(const void*, int, Handle, int, int, Handle);
using Isend = int (*)(const void*, int, Handle, int, int, Handle, void*);

// A blocking send of any mode (MPI_Send, MPI_Ssend, MPI_Rsend, MPI_Bsend).
int staged_send(Send pmpi, const char* name, const void* buf, int count, Handle type, int dest, int tag, Handle comm) {
  count_call();
  if (!locate(buf).on_device) return pmpi(buf, count, type, dest, tag, comm);
  CallStaging staging(name);
  void* b = nullptr;
  int err = staging.typed(buf, count, type, Access::read, &b);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(b, count, type, dest, tag, comm));
}

// A nonblocking send of any mode: the host copy lives until the request completes.
int staged_isend(Isend pmpi, const char* name, const void* buf, int count, Handle type, int dest, int tag,
                 Handle comm, void* request) {
  count_call();
  if (!locate(buf).on_device) return pmpi(buf, count, type, dest, tag, comm, request);
  auto staging = std::make_unique<CallStaging>(name);
  void* b = nullptr;
  int err = staging->typed(buf, count, type, Access::read, &b);
  if (err != kSuccess) return err;
  err = pmpi(b, count, type, dest, tag, comm, request);
  if (err == kSuccess && staging->staged_any()) keep_until_complete(request, std::move(staging));
  return err;
}

}  // namespace

HPCOLLS_PMPI_EXPORT int MPI_Send(const void* buf, int count, Handle type, int dest, int tag, Handle comm) {
  static const auto pmpi = next<Send>("PMPI_Send");
  return staged_send(pmpi, "MPI_Send", buf, count, type, dest, tag, comm);
}
HPCOLLS_PMPI_EXPORT int MPI_Ssend(const void* buf, int count, Handle type, int dest, int tag, Handle comm) {
  static const auto pmpi = next<Send>("PMPI_Ssend");
  return staged_send(pmpi, "MPI_Ssend", buf, count, type, dest, tag, comm);
}
HPCOLLS_PMPI_EXPORT int MPI_Rsend(const void* buf, int count, Handle type, int dest, int tag, Handle comm) {
  static const auto pmpi = next<Send>("PMPI_Rsend");
  return staged_send(pmpi, "MPI_Rsend", buf, count, type, dest, tag, comm);
}
HPCOLLS_PMPI_EXPORT int MPI_Bsend(const void* buf, int count, Handle type, int dest, int tag, Handle comm) {
  static const auto pmpi = next<Send>("PMPI_Bsend");
  return staged_send(pmpi, "MPI_Bsend", buf, count, type, dest, tag, comm);
}

HPCOLLS_PMPI_EXPORT int MPI_Recv(void* buf, int count, Handle type, int source, int tag, Handle comm, void* status) {
  static const auto pmpi = next<int (*)(void*, int, Handle, int, int, Handle, void*)>("PMPI_Recv");
  count_call();
  if (!locate(buf).on_device) return pmpi(buf, count, type, source, tag, comm, status);
  CallStaging staging("MPI_Recv");
  void* b = nullptr;
  int err = staging.typed(buf, count, type, Access::write, &b);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(b, count, type, source, tag, comm, status));
}

HPCOLLS_PMPI_EXPORT int MPI_Sendrecv(const void* sendbuf, int sendcount, Handle sendtype, int dest, int sendtag,
                                     void* recvbuf, int recvcount, Handle recvtype, int source, int recvtag,
                                     Handle comm, void* status) {
  static const auto pmpi =
      next<int (*)(const void*, int, Handle, int, int, void*, int, Handle, int, int, Handle, void*)>("PMPI_Sendrecv");
  count_call();
  if (!locate(sendbuf).on_device && !locate(recvbuf).on_device)
    return pmpi(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm,
                status);
  CallStaging staging("MPI_Sendrecv");
  void *s = nullptr, *r = nullptr;
  int err = staging.typed(sendbuf, sendcount, sendtype, Access::read, &s);
  if (err == kSuccess) err = staging.typed(recvbuf, recvcount, recvtype, Access::write, &r);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(s, sendcount, sendtype, dest, sendtag, r, recvcount, recvtype, source, recvtag, comm,
                             status));
}

HPCOLLS_PMPI_EXPORT int MPI_Sendrecv_replace(void* buf, int count, Handle type, int dest, int sendtag, int source,
                                             int recvtag, Handle comm, void* status) {
  static const auto pmpi =
      next<int (*)(void*, int, Handle, int, int, int, int, Handle, void*)>("PMPI_Sendrecv_replace");
  count_call();
  if (!locate(buf).on_device) return pmpi(buf, count, type, dest, sendtag, source, recvtag, comm, status);
  CallStaging staging("MPI_Sendrecv_replace");
  void* b = nullptr;
  int err = staging.typed(buf, count, type, Access::write, &b);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(b, count, type, dest, sendtag, source, recvtag, comm, status));
}

HPCOLLS_PMPI_EXPORT int MPI_Isend(const void* buf, int count, Handle type, int dest, int tag, Handle comm,
                                  void* request) {
  static const auto pmpi = next<Isend>("PMPI_Isend");
  return staged_isend(pmpi, "MPI_Isend", buf, count, type, dest, tag, comm, request);
}
HPCOLLS_PMPI_EXPORT int MPI_Issend(const void* buf, int count, Handle type, int dest, int tag, Handle comm,
                                   void* request) {
  static const auto pmpi = next<Isend>("PMPI_Issend");
  return staged_isend(pmpi, "MPI_Issend", buf, count, type, dest, tag, comm, request);
}
HPCOLLS_PMPI_EXPORT int MPI_Irsend(const void* buf, int count, Handle type, int dest, int tag, Handle comm,
                                   void* request) {
  static const auto pmpi = next<Isend>("PMPI_Irsend");
  return staged_isend(pmpi, "MPI_Irsend", buf, count, type, dest, tag, comm, request);
}
HPCOLLS_PMPI_EXPORT int MPI_Ibsend(const void* buf, int count, Handle type, int dest, int tag, Handle comm,
                                   void* request) {
  static const auto pmpi = next<Isend>("PMPI_Ibsend");
  return staged_isend(pmpi, "MPI_Ibsend", buf, count, type, dest, tag, comm, request);
}

HPCOLLS_PMPI_EXPORT int MPI_Irecv(void* buf, int count, Handle type, int source, int tag, Handle comm,
                                  void* request) {
  static const auto pmpi = next<int (*)(void*, int, Handle, int, int, Handle, void*)>("PMPI_Irecv");
  count_call();
  if (!locate(buf).on_device) return pmpi(buf, count, type, source, tag, comm, request);
  auto staging = std::make_unique<CallStaging>("MPI_Irecv");
  void* b = nullptr;
  int err = staging->typed(buf, count, type, Access::write, &b);
  if (err != kSuccess) return err;
  err = pmpi(b, count, type, source, tag, comm, request);
  if (err == kSuccess && staging->staged_any()) keep_until_complete(request, std::move(staging));
  return err;
}
