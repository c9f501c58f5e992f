// Nonblocking calls whose device buffers were staged through host memory: each request's staging
// (its host copies) is kept until the request completes, by whichever of MPI_Wait, MPI_Waitall,
// MPI_Waitany, MPI_Waitsome, MPI_Test, MPI_Testall, MPI_Testany and MPI_Testsome completes it
// (completion_entry_points.cpp); then the received bytes are copied back to the device buffer and
// the host copies freed. A send's host copy is only kept alive until then.
//
// A completion call on host requests only pays one atomic load (no request pending in the process).
// A request is known complete when MPI has set the caller's handle to MPI_REQUEST_NULL, which it
// does for every nonpersistent request it completes, whatever the completion call; persistent
// requests (MPI_*_init) are not staged (their buffers would need a copy at every MPI_Start).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "call_staging.h"
#include "mpi_opaque.h"

namespace hpcolls_pmpi {

namespace detail {
extern std::atomic<int> g_pending_requests;
}  // namespace detail

inline bool any_request_pending() { return detail::g_pending_requests.load(std::memory_order_relaxed) > 0; }

// The request handle at index i of an MPI_Request array (or at *request: i = 0), as a number that
// compares alike in Open MPI (pointers) and MPICH (ints).
std::uintptr_t request_at(const void* requests, int i);

// Keeps `staging` until the request *request (just returned by MPI) completes.
void keep_until_complete(const void* request, std::unique_ptr<CallStaging> staging);

// After a completion call over `n` requests at `requests`, whose handles were `before` when it was
// made: finishes (copies back, frees) the staging of every kept request that MPI completed.
// Returns MPI_SUCCESS or the error of a copy back that failed.
int finish_completed(const std::vector<std::uintptr_t>& before, const void* requests, int n);

}  // namespace hpcolls_pmpi
