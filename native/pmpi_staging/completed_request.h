// A request that is already complete and whose status is a given one: what a nonblocking call
// returns when this library had to make the operation blocking (a staged device buffer has no
// later point where its copy back could run: mpi4py completes requests in MPI_Wait/MPI_Test and
// the like, which this library does not see).
#pragma once

namespace hpcolls_pmpi {

// status: the status the blocking operation wrote (any MPI library's layout, up to
// kStatusStorage bytes). request: the caller's MPI_Request*, which receives the handle of a
// generalized request (MPI_Grequest_start) completed at once; waiting on it gives `status`.
constexpr int kStatusStorage = 256;
int start_completed_request(const void* status, void* request, const char* function);

}  // namespace hpcolls_pmpi
