// The Fortran entry points (mpif.h and `use mpi`) of the six collectives. Open MPI's Fortran
// layer calls the PMPI_ C functions directly, so the C entry points never see a Fortran program's
// calls: these stand in front of the Fortran symbols instead, under every name a Fortran compiler
// may give them (mpi_allreduce_, mpi_allreduce__, mpi_allreduce, MPI_ALLREDUCE). A call whose
// buffers are host memory goes to the MPI library's own Fortran entry of the same name (so its
// Fortran semantics are MPI's own); one on device buffers has its handles converted
// (MPI_*_f2c), Fortran's MPI_IN_PLACE read as C's, and goes to device_collectives.cpp.
// `use mpi_f08` (Open MPI's mpi_allreduce_f08 & co., whose buffers may arrive as array
// descriptors) is not covered yet: docs/DROP_IN.md says so.
#include <dlfcn.h>

#include "call_counter.h"
#include "device_collectives.h"
#include "device_memory.h"
#include "libmpi.h"
#include "mpi_abi.h"
#include "mpi_opaque.h"

using namespace hpcolls_pmpi;

namespace {

using Fint = int;  // MPI_Fint: a C int in Open MPI and MPICH

Handle comm_f2c(const Fint* f) { static const auto c = next<Handle (*)(Fint)>("PMPI_Comm_f2c"); return c(*f); }
Handle type_f2c(const Fint* f) { static const auto c = next<Handle (*)(Fint)>("PMPI_Type_f2c"); return c(*f); }
Handle op_f2c(const Fint* f) { static const auto c = next<Handle (*)(Fint)>("PMPI_Op_f2c"); return c(*f); }

// Fortran's MPI_IN_PLACE (a common block's address) as C's.
const void* c_buffer(const void* buf) {
  const MpiAbi* abi = mpi_abi();
  return abi != nullptr && abi->fortran_in_place != nullptr && buf == abi->fortran_in_place ? abi->in_place : buf;
}

bool on_device(const void* a, const void* b) { return locate(a).on_device || locate(b).on_device; }

template <class F>
F fortran_next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

void allreduce(const char* name, void* send, void* recv, Fint* count, Fint* type, Fint* op, Fint* comm, Fint* ierr) {
  count_call();
  if (!on_device(send, recv)) {
    fortran_next<void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*)>(name)(send, recv, count, type, op, comm, ierr);
    return;
  }
  *ierr = device_allreduce(c_buffer(send), recv, *count, type_f2c(type), op_f2c(op), comm_f2c(comm), Launch{});
}
void bcast(const char* name, void* buf, Fint* count, Fint* type, Fint* root, Fint* comm, Fint* ierr) {
  count_call();
  if (!on_device(buf, nullptr)) {
    fortran_next<void (*)(void*, Fint*, Fint*, Fint*, Fint*, Fint*)>(name)(buf, count, type, root, comm, ierr);
    return;
  }
  *ierr = device_bcast(buf, *count, type_f2c(type), *root, comm_f2c(comm), Launch{});
}
void reduce(const char* name, void* send, void* recv, Fint* count, Fint* type, Fint* op, Fint* root, Fint* comm,
            Fint* ierr) {
  count_call();
  if (!on_device(send, recv)) {
    fortran_next<void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*)>(name)(send, recv, count, type, op,
                                                                                        root, comm, ierr);
    return;
  }
  *ierr = device_reduce(c_buffer(send), recv, *count, type_f2c(type), op_f2c(op), *root, comm_f2c(comm), Launch{});
}
void allgather(const char* name, void* send, Fint* scount, Fint* stype, void* recv, Fint* rcount, Fint* rtype,
               Fint* comm, Fint* ierr) {
  count_call();
  if (!on_device(send, recv)) {
    fortran_next<void (*)(void*, Fint*, Fint*, void*, Fint*, Fint*, Fint*, Fint*)>(name)(send, scount, stype, recv,
                                                                                        rcount, rtype, comm, ierr);
    return;
  }
  const void* s = c_buffer(send);
  const MpiAbi* abi = mpi_abi();
  Handle st = abi != nullptr && s == abi->in_place ? nullptr : type_f2c(stype);
  *ierr = device_allgather(s, *scount, st, recv, *rcount, type_f2c(rtype), comm_f2c(comm), Launch{});
}
void reduce_scatter_block(const char* name, void* send, void* recv, Fint* count, Fint* type, Fint* op, Fint* comm,
                          Fint* ierr) {
  count_call();
  if (!on_device(send, recv)) {
    fortran_next<void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*)>(name)(send, recv, count, type, op, comm, ierr);
    return;
  }
  *ierr = device_reduce_scatter_block(c_buffer(send), recv, *count, type_f2c(type), op_f2c(op), comm_f2c(comm),
                                      Launch{});
}
void reduce_scatter(const char* name, void* send, void* recv, Fint* counts, Fint* type, Fint* op, Fint* comm,
                    Fint* ierr) {
  count_call();
  if (!on_device(send, recv)) {
    fortran_next<void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*)>(name)(send, recv, counts, type, op, comm,
                                                                                 ierr);
    return;
  }
  *ierr = device_reduce_scatter(c_buffer(send), recv, counts, type_f2c(type), op_f2c(op), comm_f2c(comm), Launch{});
}

}  // namespace

// Every spelling a Fortran compiler gives an external name, each forwarding to the MPI library's
// entry of that same spelling.
#define HPCOLLS_FORTRAN_ENTRY(lower, upper, impl, params, args)                              \
  HPCOLLS_PMPI_EXPORT void lower##_ params { impl(#lower "_", args); }                      \
  HPCOLLS_PMPI_EXPORT void lower##__ params { impl(#lower "__", args); }                    \
  HPCOLLS_PMPI_EXPORT void lower params { impl(#lower, args); }                             \
  HPCOLLS_PMPI_EXPORT void upper params { impl(#upper, args); }
#define HPCOLLS_ARGS(...) __VA_ARGS__

HPCOLLS_FORTRAN_ENTRY(mpi_allreduce, MPI_ALLREDUCE, allreduce,
                      (void* s, void* r, Fint* c, Fint* t, Fint* o, Fint* m, Fint* e), HPCOLLS_ARGS(s, r, c, t, o, m, e))
HPCOLLS_FORTRAN_ENTRY(mpi_bcast, MPI_BCAST, bcast, (void* b, Fint* c, Fint* t, Fint* root, Fint* m, Fint* e),
                      HPCOLLS_ARGS(b, c, t, root, m, e))
HPCOLLS_FORTRAN_ENTRY(mpi_reduce, MPI_REDUCE, reduce,
                      (void* s, void* r, Fint* c, Fint* t, Fint* o, Fint* root, Fint* m, Fint* e),
                      HPCOLLS_ARGS(s, r, c, t, o, root, m, e))
HPCOLLS_FORTRAN_ENTRY(mpi_allgather, MPI_ALLGATHER, allgather,
                      (void* s, Fint* sc, Fint* st, void* r, Fint* rc, Fint* rt, Fint* m, Fint* e),
                      HPCOLLS_ARGS(s, sc, st, r, rc, rt, m, e))
HPCOLLS_FORTRAN_ENTRY(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, reduce_scatter_block,
                      (void* s, void* r, Fint* c, Fint* t, Fint* o, Fint* m, Fint* e), HPCOLLS_ARGS(s, r, c, t, o, m, e))
HPCOLLS_FORTRAN_ENTRY(mpi_reduce_scatter, MPI_REDUCE_SCATTER, reduce_scatter,
                      (void* s, void* r, Fint* c, Fint* t, Fint* o, Fint* m, Fint* e), HPCOLLS_ARGS(s, r, c, t, o, m, e))
