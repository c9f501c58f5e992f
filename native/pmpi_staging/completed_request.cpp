// Two things about MPI's types are unknown to this library (mpi_opaque.h) and handled so:
// - the status layout: the status is kept in MPI's Fortran form (MPI_Status_c2f) and written into
//   whatever status the query receives with MPI_Status_f2c, so MPI itself copies source, tag,
//   error, count and cancelled, whatever its layout;
// - the width of an MPI_Request (a pointer in Open MPI, an int in MPICH): the generalized request
//   is started into 8 bytes of our own filled with 0xff first; an int handle leaves the upper
//   four untouched, while a pointer's upper bytes can never all be 0xff (user-space addresses
//   on x86-64 and aarch64 are below 2^56). That width of bytes is what the caller's request gets.
#include "completed_request.h"

#include <cstdint>
#include <cstring>

#include "errors.h"
#include "libmpi.h"
#include "mpi_opaque.h"

namespace hpcolls_pmpi {
namespace {

constexpr int kFortranStatusInts = 64;  // MPI_STATUS_SIZE is 5 or 6 in the libraries we know

struct KeptStatus {
  int fortran[kFortranStatusInts];  // MPI_Fint is a C int in Open MPI and MPICH
};

int query(void* extra_state, void* status) {
  auto f2c = next<int (*)(const int*, void*)>("PMPI_Status_f2c");
  return f2c(static_cast<KeptStatus*>(extra_state)->fortran, status);
}

int release(void* extra_state) {
  delete static_cast<KeptStatus*>(extra_state);
  return kSuccess;
}

int cancel(void*, int) { return kSuccess; }  // complete already: nothing to cancel

}  // namespace

int start_completed_request(const void* status, void* request, const char* function) {
  using Query = int (*)(void*, void*);
  using Free = int (*)(void*);
  using Cancel = int (*)(void*, int);
  auto grequest_start = next<int (*)(Query, Free, Cancel, void*, void*)>("PMPI_Grequest_start");
  auto grequest_complete = next<int (*)(Handle)>("PMPI_Grequest_complete");
  auto c2f = next<int (*)(const void*, int*)>("PMPI_Status_c2f");
  if (grequest_start == nullptr || grequest_complete == nullptr || c2f == nullptr ||
      next<void*>("PMPI_Status_f2c") == nullptr)
    return error_codef("%s: the MPI library lacks generalized requests or status conversion", function);

  auto* kept = new KeptStatus{};
  int err = c2f(status, kept->fortran);
  if (err != kSuccess) {
    delete kept;
    return err;
  }
  unsigned char handle_bytes[8];
  std::memset(handle_bytes, 0xff, sizeof handle_bytes);
  err = grequest_start(query, release, cancel, kept, handle_bytes);
  if (err != kSuccess) {
    delete kept;
    return err;
  }
  std::size_t width = 4;
  for (int i = 4; i < 8; ++i)
    if (handle_bytes[i] != 0xff) width = 8;
  std::uintptr_t handle = 0;
  std::memcpy(&handle, handle_bytes, width);
  err = grequest_complete(reinterpret_cast<Handle>(handle));
  std::memcpy(request, handle_bytes, width);  // released with the request, by whatever frees it
  return err;
}

}  // namespace hpcolls_pmpi
