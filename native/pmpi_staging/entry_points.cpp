// The MPI entry points through which mpi4py's classes other than the communicators hand buffers
// to MPI (Message.Recv/Irecv, Datatype.Pack/Unpack/Pack_external/Unpack_external,
// Op.Reduce_local), defined here so that an LD_PRELOAD of this library puts them in front of the
// MPI library's: device buffers are staged through host memory when the MPI library is not
// CUDA-aware (call_staging.h); everything else goes to the PMPI_ entry unchanged.
//
// Only the classic entries: mpi4py calls the large-count ones (MPI_Pack_c, ...) when the MPI
// library has them and these otherwise (Open MPI 4 and 5 have none); defining the _c entries here
// would make mpi4py believe an Open MPI had them.
#include <atomic>

#include "call_counter.h"
#include "call_staging.h"
#include "completed_request.h"
#include "errors.h"
#include "libmpi.h"
#include "mpi_opaque.h"

using namespace hpcolls_pmpi;

namespace hpcolls_pmpi {
std::atomic<unsigned long long> g_calls{0};
}  // namespace hpcolls_pmpi

namespace {

// Counts one call that went through this library; returns `entry` (each entry point looks its
// PMPI_ function up once, at its first call, when the MPI library is loaded: it is the caller).
template <class F>
F counted(F entry) {
  count_call();
  return entry;
}

int missing(const char* name) { return error_codef("the MPI library has no %s", name); }

}  // namespace

// Marker: `python -m hpcolls info` looks it up in the process's global scope to tell whether
// the library is preloaded (active) there.
HPCOLLS_PMPI_EXPORT const char hpcolls_pmpi_staging_active[] = "hpcolls PMPI staging 1";

// Calls that went through these entry points in this process (a test of the interposition).
HPCOLLS_PMPI_EXPORT unsigned long long hpcolls_pmpi_staging_calls() { return g_calls.load(); }

HPCOLLS_PMPI_EXPORT int MPI_Mrecv(void* buf, int count, Handle datatype, void* message, void* status) {
  static const auto pmpi_entry = next<int (*)(void*, int, Handle, void*, void*)>("PMPI_Mrecv");
  auto pmpi = counted(pmpi_entry);
  if (pmpi == nullptr) return missing("PMPI_Mrecv");
  CallStaging staging("MPI_Mrecv");
  void* b = nullptr;
  int err = staging.typed(buf, count, datatype, Access::write, &b);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(b, count, datatype, message, status));
}

// A device buffer is received at once (the message is matched already, so the blocking receive
// waits only for its data), copied back, and a request that is already complete is returned,
// with the receive's status (completed_request.h). Host buffers get MPI's own nonblocking receive.
HPCOLLS_PMPI_EXPORT int MPI_Imrecv(void* buf, int count, Handle datatype, void* message, void* request) {
  static const auto pmpi_entry = next<int (*)(void*, int, Handle, void*, void*)>("PMPI_Imrecv");
  auto pmpi = counted(pmpi_entry);
  static const auto mrecv = next<int (*)(void*, int, Handle, void*, void*)>("PMPI_Mrecv");
  if (pmpi == nullptr || mrecv == nullptr) return missing("PMPI_Imrecv or PMPI_Mrecv");
  CallStaging staging("MPI_Imrecv");
  void* b = nullptr;
  int err = staging.typed(buf, count, datatype, Access::write, &b);
  if (err != kSuccess) return err;
  if (!staging.staged_any()) return pmpi(buf, count, datatype, message, request);
  alignas(16) unsigned char status[kStatusStorage] = {};
  err = staging.finish(mrecv(b, count, datatype, message, status));
  if (err != kSuccess) return err;
  return start_completed_request(status, request, "MPI_Imrecv");
}

HPCOLLS_PMPI_EXPORT int MPI_Pack(const void* inbuf, int incount, Handle datatype, void* outbuf, int outsize,
                                 int* position, Handle comm) {
  static const auto pmpi_entry = next<int (*)(const void*, int, Handle, void*, int, int*, Handle)>("PMPI_Pack");
  auto pmpi = counted(pmpi_entry);
  if (pmpi == nullptr) return missing("PMPI_Pack");
  CallStaging staging("MPI_Pack");
  void *in = nullptr, *out = nullptr;
  int err = staging.typed(inbuf, incount, datatype, Access::read, &in);
  if (err == kSuccess && position != nullptr) err = staging.bytes(outbuf, *position, outsize, Access::write, &out);
  if (err != kSuccess) return err;
  if (position == nullptr) out = outbuf;
  return staging.finish(pmpi(in, incount, datatype, out, outsize, position, comm));
}

HPCOLLS_PMPI_EXPORT int MPI_Unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount,
                                   Handle datatype, Handle comm) {
  static const auto pmpi_entry = next<int (*)(const void*, int, int*, void*, int, Handle, Handle)>("PMPI_Unpack");
  auto pmpi = counted(pmpi_entry);
  if (pmpi == nullptr) return missing("PMPI_Unpack");
  CallStaging staging("MPI_Unpack");
  void *in = const_cast<void*>(inbuf), *out = nullptr;
  int err = position != nullptr ? staging.bytes(inbuf, *position, insize, Access::read, &in) : kSuccess;
  if (err == kSuccess) err = staging.typed(outbuf, outcount, datatype, Access::write, &out);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(in, insize, position, out, outcount, datatype, comm));
}

HPCOLLS_PMPI_EXPORT int MPI_Pack_external(const char* datarep, const void* inbuf, int incount, Handle datatype,
                                          void* outbuf, Aint outsize, Aint* position) {
  static const auto pmpi_entry = next<int (*)(const char*, const void*, int, Handle, void*, Aint, Aint*)>("PMPI_Pack_external");
  auto pmpi = counted(pmpi_entry);
  if (pmpi == nullptr) return missing("PMPI_Pack_external");
  CallStaging staging("MPI_Pack_external");
  void *in = nullptr, *out = outbuf;
  int err = staging.typed(inbuf, incount, datatype, Access::read, &in);
  if (err == kSuccess && position != nullptr) err = staging.bytes(outbuf, *position, outsize, Access::write, &out);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(datarep, in, incount, datatype, out, outsize, position));
}

HPCOLLS_PMPI_EXPORT int MPI_Unpack_external(const char* datarep, const void* inbuf, Aint insize, Aint* position,
                                            void* outbuf, int outcount, Handle datatype) {
  static const auto pmpi_entry = next<int (*)(const char*, const void*, Aint, Aint*, void*, int, Handle)>("PMPI_Unpack_external");
  auto pmpi = counted(pmpi_entry);
  if (pmpi == nullptr) return missing("PMPI_Unpack_external");
  CallStaging staging("MPI_Unpack_external");
  void *in = const_cast<void*>(inbuf), *out = nullptr;
  int err = position != nullptr ? staging.bytes(inbuf, *position, insize, Access::read, &in) : kSuccess;
  if (err == kSuccess) err = staging.typed(outbuf, outcount, datatype, Access::write, &out);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(datarep, in, insize, position, out, outcount, datatype));
}

HPCOLLS_PMPI_EXPORT int MPI_Reduce_local(const void* inbuf, void* inoutbuf, int count, Handle datatype, Handle op) {
  static const auto pmpi_entry = next<int (*)(const void*, void*, int, Handle, Handle)>("PMPI_Reduce_local");
  auto pmpi = counted(pmpi_entry);
  if (pmpi == nullptr) return missing("PMPI_Reduce_local");
  CallStaging staging("MPI_Reduce_local");
  void *in = nullptr, *inout = nullptr;
  int err = staging.typed(inbuf, count, datatype, Access::read, &in);
  if (err == kSuccess) err = staging.typed(inoutbuf, count, datatype, Access::write, &inout);
  if (err != kSuccess) return err;
  return staging.finish(pmpi(in, inout, count, datatype, op));
}
