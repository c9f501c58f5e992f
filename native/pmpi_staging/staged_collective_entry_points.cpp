// MPI's collectives other than the six the native kernels take (collective_entry_points.cpp),
// with device buffers: staged through host memory on an MPI that is not CUDA-aware, as
// hpcolls/routes/mpi_staged.py stages mpi4py's. A buffer MPI ignores on this rank (a non-root's
// Gather receive buffer, ...) is not staged. The vector forms stage each buffer from its start to
// the end of its furthest block (counts and displacements in elements of the call's datatype;
// negative displacements are not staged: the call fails as MPI would on a device pointer).
// Host buffers go to the PMPI_ entry after the cheap checks of device_memory.h.
#include <algorithm>

#include "call_counter.h"
#include "call_staging.h"
#include "comm_query.h"
#include "device_memory.h"
#include "libmpi.h"
#include "mpi_abi.h"
#include "mpi_opaque.h"
#include "staged_collectives.h"

namespace hpcolls_pmpi {
namespace {

// Elements from a vector call's buffer start to the end of its furthest block.
long long span(const int* counts, const int* displs, int n) {
  long long end = 0;
  for (int q = 0; counts != nullptr && displs != nullptr && q < n; ++q)
    if (counts[q] > 0) end = std::max(end, (long long)displs[q] + counts[q]);
  return end;
}

}  // namespace

bool either_on_device(const void* a, const void* b) { return locate(a).on_device || locate(b).on_device; }

// Each: the call staged, through `pmpi` (the blocking PMPI_ function).
int stage_gather(GatherFn pmpi, const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                 int root, Handle comm) {
  const bool at_root = comm_rank(comm) == root;
  CallStaging staging("MPI_Gather");
  void *s = const_cast<void*>(send), *r = recv;
  int err = in_place(send) ? kSuccess : staging.typed(send, scount, stype, Access::read, &s);
  if (err == kSuccess && at_root) err = staging.typed(recv, (long long)rcount * comm_size(comm), rtype, Access::write, &r);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(s, scount, stype, r, rcount, rtype, root, comm));
}

int stage_gatherv(GathervFn pmpi, const void* send, int scount, Handle stype, void* recv, const int* rcounts,
                  const int* displs, Handle rtype, int root, Handle comm) {
  const bool at_root = comm_rank(comm) == root;
  CallStaging staging("MPI_Gatherv");
  void *s = const_cast<void*>(send), *r = recv;
  int err = in_place(send) ? kSuccess : staging.typed(send, scount, stype, Access::read, &s);
  if (err == kSuccess && at_root)
    err = staging.typed(recv, span(rcounts, displs, comm_size(comm)), rtype, Access::write, &r);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(s, scount, stype, r, rcounts, displs, rtype, root, comm));
}

int stage_scatter(ScatterFn pmpi, const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                  int root, Handle comm) {
  const bool at_root = comm_rank(comm) == root;
  CallStaging staging("MPI_Scatter");
  void *s = const_cast<void*>(send), *r = recv;
  int err = at_root ? staging.typed(send, (long long)scount * comm_size(comm), stype, Access::read, &s) : kSuccess;
  if (err == kSuccess && !in_place(recv)) err = staging.typed(recv, rcount, rtype, Access::write, &r);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(s, scount, stype, r, rcount, rtype, root, comm));
}

int stage_scatterv(ScattervFn pmpi, const void* send, const int* scounts, const int* displs, Handle stype, void* recv,
                   int rcount, Handle rtype, int root, Handle comm) {
  const bool at_root = comm_rank(comm) == root;
  CallStaging staging("MPI_Scatterv");
  void *s = const_cast<void*>(send), *r = recv;
  int err = at_root ? staging.typed(send, span(scounts, displs, comm_size(comm)), stype, Access::read, &s) : kSuccess;
  if (err == kSuccess && !in_place(recv)) err = staging.typed(recv, rcount, rtype, Access::write, &r);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(s, scounts, displs, stype, r, rcount, rtype, root, comm));
}

int stage_allgatherv(AllgathervFn pmpi, const void* send, int scount, Handle stype, void* recv, const int* rcounts,
                     const int* displs, Handle rtype, Handle comm) {
  CallStaging staging("MPI_Allgatherv");
  void *s = const_cast<void*>(send), *r = recv;
  int err = in_place(send) ? kSuccess : staging.typed(send, scount, stype, Access::read, &s);
  if (err == kSuccess) err = staging.typed(recv, span(rcounts, displs, comm_size(comm)), rtype, Access::write, &r);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(s, scount, stype, r, rcounts, displs, rtype, comm));
}

int stage_alltoall(AlltoallFn pmpi, const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                   Handle comm) {
  const int n = comm_size(comm);
  CallStaging staging("MPI_Alltoall");
  void *s = const_cast<void*>(send), *r = recv;
  int err = in_place(send) ? kSuccess : staging.typed(send, (long long)scount * n, stype, Access::read, &s);
  if (err == kSuccess) err = staging.typed(recv, (long long)rcount * n, rtype, Access::write, &r);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(s, scount, stype, r, rcount, rtype, comm));
}

int stage_alltoallv(AlltoallvFn pmpi, const void* send, const int* scounts, const int* sdispls, Handle stype,
                    void* recv, const int* rcounts, const int* rdispls, Handle rtype, Handle comm) {
  const int n = comm_size(comm);
  CallStaging staging("MPI_Alltoallv");
  void *s = const_cast<void*>(send), *r = recv;
  int err = in_place(send) ? kSuccess : staging.typed(send, span(scounts, sdispls, n), stype, Access::read, &s);
  if (err == kSuccess) err = staging.typed(recv, span(rcounts, rdispls, n), rtype, Access::write, &r);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(s, scounts, sdispls, stype, r, rcounts, rdispls, rtype, comm));
}

int stage_scan(ScanFn pmpi, const char* name, const void* send, void* recv, int count, Handle type, Handle op,
               Handle comm) {
  CallStaging staging(name);
  void *s = const_cast<void*>(send), *r = recv;
  int err = in_place(send) ? kSuccess : staging.typed(send, count, type, Access::read, &s);
  if (err == kSuccess) err = staging.typed(recv, count, type, Access::write, &r);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(s, r, count, type, op, comm));
}

}  // namespace hpcolls_pmpi

using namespace hpcolls_pmpi;

HPCOLLS_PMPI_EXPORT int MPI_Gather(const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                                   int root, Handle comm) {
  static const auto pmpi = next<GatherFn>("PMPI_Gather");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, scount, stype, recv, rcount, rtype, root, comm);
  return stage_gather(pmpi, send, scount, stype, recv, rcount, rtype, root, comm);
}

HPCOLLS_PMPI_EXPORT int MPI_Gatherv(const void* send, int scount, Handle stype, void* recv, const int* rcounts,
                                    const int* displs, Handle rtype, int root, Handle comm) {
  static const auto pmpi = next<GathervFn>("PMPI_Gatherv");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, scount, stype, recv, rcounts, displs, rtype, root, comm);
  return stage_gatherv(pmpi, send, scount, stype, recv, rcounts, displs, rtype, root, comm);
}

HPCOLLS_PMPI_EXPORT int MPI_Scatter(const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                                    int root, Handle comm) {
  static const auto pmpi = next<ScatterFn>("PMPI_Scatter");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, scount, stype, recv, rcount, rtype, root, comm);
  return stage_scatter(pmpi, send, scount, stype, recv, rcount, rtype, root, comm);
}

HPCOLLS_PMPI_EXPORT int MPI_Scatterv(const void* send, const int* scounts, const int* displs, Handle stype, void* recv,
                                     int rcount, Handle rtype, int root, Handle comm) {
  static const auto pmpi = next<ScattervFn>("PMPI_Scatterv");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, scounts, displs, stype, recv, rcount, rtype, root, comm);
  return stage_scatterv(pmpi, send, scounts, displs, stype, recv, rcount, rtype, root, comm);
}

HPCOLLS_PMPI_EXPORT int MPI_Allgatherv(const void* send, int scount, Handle stype, void* recv, const int* rcounts,
                                       const int* displs, Handle rtype, Handle comm) {
  static const auto pmpi = next<AllgathervFn>("PMPI_Allgatherv");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, scount, stype, recv, rcounts, displs, rtype, comm);
  return stage_allgatherv(pmpi, send, scount, stype, recv, rcounts, displs, rtype, comm);
}

HPCOLLS_PMPI_EXPORT int MPI_Alltoall(const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                                     Handle comm) {
  static const auto pmpi = next<AlltoallFn>("PMPI_Alltoall");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, scount, stype, recv, rcount, rtype, comm);
  return stage_alltoall(pmpi, send, scount, stype, recv, rcount, rtype, comm);
}

HPCOLLS_PMPI_EXPORT int MPI_Alltoallv(const void* send, const int* scounts, const int* sdispls, Handle stype,
                                      void* recv, const int* rcounts, const int* rdispls, Handle rtype, Handle comm) {
  static const auto pmpi = next<AlltoallvFn>("PMPI_Alltoallv");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm);
  return stage_alltoallv(pmpi, send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype, comm);
}

HPCOLLS_PMPI_EXPORT int MPI_Scan(const void* send, void* recv, int count, Handle type, Handle op, Handle comm) {
  static const auto pmpi = next<ScanFn>("PMPI_Scan");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, recv, count, type, op, comm);
  return stage_scan(pmpi, "MPI_Scan", send, recv, count, type, op, comm);
}

HPCOLLS_PMPI_EXPORT int MPI_Exscan(const void* send, void* recv, int count, Handle type, Handle op, Handle comm) {
  static const auto pmpi = next<ScanFn>("PMPI_Exscan");
  count_call();
  if (!either_on_device(send, recv)) return pmpi(send, recv, count, type, op, comm);
  return stage_scan(pmpi, "MPI_Exscan", send, recv, count, type, op, comm);
}
