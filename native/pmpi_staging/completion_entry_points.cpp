// MPI's completion calls, in front of the MPI library so that a staged nonblocking call's copy
// back runs when its request completes (pending_requests.h). With no staged request pending in
// the process they go to the PMPI_ entry after one atomic load.
#include <vector>

#include "call_counter.h"
#include "libmpi.h"
#include "mpi_opaque.h"
#include "pending_requests.h"

using namespace hpcolls_pmpi;

namespace {

// Runs `call` (the PMPI_ completion over n requests at `requests`), then finishes the staged
// requests it completed. MPI's error first; else a failed copy back's.
template <class Call>
int completing(const void* requests, int n, Call call) {
  count_call();
  if (!any_request_pending() || requests == nullptr || n <= 0) return call();
  std::vector<std::uintptr_t> before(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) before[std::size_t(i)] = request_at(requests, i);
  const int err = call();
  const int copied = finish_completed(before, requests, n);
  return err != kSuccess ? err : copied;
}

}  // namespace

HPCOLLS_PMPI_EXPORT int MPI_Wait(void* request, void* status) {
  static const auto pmpi = next<int (*)(void*, void*)>("PMPI_Wait");
  return completing(request, 1, [&] { return pmpi(request, status); });
}
HPCOLLS_PMPI_EXPORT int MPI_Test(void* request, int* flag, void* status) {
  static const auto pmpi = next<int (*)(void*, int*, void*)>("PMPI_Test");
  return completing(request, 1, [&] { return pmpi(request, flag, status); });
}
HPCOLLS_PMPI_EXPORT int MPI_Waitall(int count, void* requests, void* statuses) {
  static const auto pmpi = next<int (*)(int, void*, void*)>("PMPI_Waitall");
  return completing(requests, count, [&] { return pmpi(count, requests, statuses); });
}
HPCOLLS_PMPI_EXPORT int MPI_Testall(int count, void* requests, int* flag, void* statuses) {
  static const auto pmpi = next<int (*)(int, void*, int*, void*)>("PMPI_Testall");
  return completing(requests, count, [&] { return pmpi(count, requests, flag, statuses); });
}
HPCOLLS_PMPI_EXPORT int MPI_Waitany(int count, void* requests, int* index, void* status) {
  static const auto pmpi = next<int (*)(int, void*, int*, void*)>("PMPI_Waitany");
  return completing(requests, count, [&] { return pmpi(count, requests, index, status); });
}
HPCOLLS_PMPI_EXPORT int MPI_Testany(int count, void* requests, int* index, int* flag, void* status) {
  static const auto pmpi = next<int (*)(int, void*, int*, int*, void*)>("PMPI_Testany");
  return completing(requests, count, [&] { return pmpi(count, requests, index, flag, status); });
}
HPCOLLS_PMPI_EXPORT int MPI_Waitsome(int incount, void* requests, int* outcount, int* indices, void* statuses) {
  static const auto pmpi = next<int (*)(int, void*, int*, int*, void*)>("PMPI_Waitsome");
  return completing(requests, incount, [&] { return pmpi(incount, requests, outcount, indices, statuses); });
}
HPCOLLS_PMPI_EXPORT int MPI_Testsome(int incount, void* requests, int* outcount, int* indices, void* statuses) {
  static const auto pmpi = next<int (*)(int, void*, int*, int*, void*)>("PMPI_Testsome");
  return completing(requests, incount, [&] { return pmpi(incount, requests, outcount, indices, statuses); });
}
