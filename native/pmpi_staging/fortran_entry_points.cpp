// The Fortran entry points of the six collectives: `include 'mpif.h'`, `use mpi` and, on Open MPI,
// `use mpi_f08`. A call whose buffers are host memory goes to the MPI library's own Fortran entry
// of the same name (so its Fortran semantics are MPI's own); one on device buffers has its handles
// converted (MPI_*_f2c), Fortran's MPI_IN_PLACE read as C's, and goes to device_collectives.cpp.
//
// How each MPI routes its Fortran calls, and so where this library must stand:
// - mpif.h and `use mpi`: the program calls mpi_allreduce_ (or mpi_allreduce__, mpi_allreduce,
//   MPI_ALLREDUCE, as its compiler names externals). Open MPI's entry calls the PMPI_ C function
//   directly, so C interposition never sees it: this library defines every one of those names.
// - `use mpi_f08` on Open MPI 4.1 and 5.0: the program calls mpi_allreduce_f08_ (the specific
//   procedure MPI_Allreduce_f08 of the generic MPI_Allreduce), in libmpi_usempif08, which calls
//   ompi_allreduce_f, the C function behind mpif.h's entry, through the dynamic linker (an
//   undefined symbol of libmpi_usempif08, defined by libmpi_mpifh), with plain buffer addresses
//   and Fortran integer handles; it calls PMPI_Allreduce. This library defines ompi_allreduce_f
//   and the five others, so it stands in front of all of mpi_f08's six collectives with the
//   mpif.h signature. (An Open MPI built with TS 29113 support, "Fort mpi_f08 subarrays: yes" in
//   ompi_info, sends mpi_f08's buffers as array descriptors to its internal ompi_allreduce_ts
//   instead: those calls go to MPI unseen, as before this library. Debian's 4.1.4 and 5.0.7 builds
//   are not such builds.)
// - MPICH (3.x, 4.x): every Fortran entry reaches the C MPI_ function through the dynamic linker
//   (libmpifort's mpi_allreduce_ after converting MPI_IN_PLACE; mpi_f08's mpi_allreduce_f08ts_
//   through MPIR_Allreduce_cdesc, after reading the array descriptors), so the C entry points
//   take those calls, and the entries here hand every call, device buffers included, to MPICH's.
#include <atomic>
#include <cstdio>
#include <cstdlib>

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

// Whether a call is this library's to take here: buffers on the device, on an MPI whose Fortran
// entries do not reach the C entry points themselves. On MPICH they do (converting handles and
// MPI_IN_PLACE first), so every call goes to MPI's Fortran entry and the C entry points take it.
bool take(const void* a, const void* b) {
  if (!locate(a).on_device && !locate(b).on_device) return false;
  const MpiAbi* abi = mpi_abi();
  return abi != nullptr && !abi->fortran_reaches_c;
}

// The MPI library's entry that one of ours stands in front of: looked up at its first call and
// kept (a host call must cost only a few ns more than MPI's own).
struct Next {
  const char* name;
  std::atomic<void*> fn{nullptr};
};

template <class F>
F fortran_next(Next& next) {
  void* fn = next.fn.load(std::memory_order_relaxed);
  if (fn == nullptr) {
    fn = next_definition(next.name);
    if (fn == nullptr) {
      std::fprintf(stderr, "hpcolls PMPI library: no MPI Fortran entry %s is loaded to hand the call to\n", next.name);
      std::abort();
    }
    next.fn.store(fn, std::memory_order_relaxed);
  }
  return reinterpret_cast<F>(fn);
}

void allreduce(Next& next, void* send, void* recv, Fint* count, Fint* type, Fint* op, Fint* comm, Fint* ierr) {
  count_call();
  if (!take(send, recv)) {
    fortran_next<void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*)>(next)(send, recv, count, type, op, comm, ierr);
    return;
  }
  *ierr = device_allreduce(c_buffer(send), recv, *count, type_f2c(type), op_f2c(op), comm_f2c(comm), Launch{});
}
void bcast(Next& next, void* buf, Fint* count, Fint* type, Fint* root, Fint* comm, Fint* ierr) {
  count_call();
  if (!take(buf, nullptr)) {
    fortran_next<void (*)(void*, Fint*, Fint*, Fint*, Fint*, Fint*)>(next)(buf, count, type, root, comm, ierr);
    return;
  }
  *ierr = device_bcast(buf, *count, type_f2c(type), *root, comm_f2c(comm), Launch{});
}
void reduce(Next& next, void* send, void* recv, Fint* count, Fint* type, Fint* op, Fint* root, Fint* comm,
            Fint* ierr) {
  count_call();
  if (!take(send, recv)) {
    fortran_next<void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*, Fint*)>(next)(send, recv, count, type, op,
                                                                                        root, comm, ierr);
    return;
  }
  *ierr = device_reduce(c_buffer(send), recv, *count, type_f2c(type), op_f2c(op), *root, comm_f2c(comm), Launch{});
}
void allgather(Next& next, void* send, Fint* scount, Fint* stype, void* recv, Fint* rcount, Fint* rtype,
               Fint* comm, Fint* ierr) {
  count_call();
  if (!take(send, recv)) {
    fortran_next<void (*)(void*, Fint*, Fint*, void*, Fint*, Fint*, Fint*, Fint*)>(next)(send, scount, stype, recv,
                                                                                        rcount, rtype, comm, ierr);
    return;
  }
  const void* s = c_buffer(send);
  const MpiAbi* abi = mpi_abi();
  Handle st = abi != nullptr && s == abi->in_place ? nullptr : type_f2c(stype);
  *ierr = device_allgather(s, *scount, st, recv, *rcount, type_f2c(rtype), comm_f2c(comm), Launch{});
}
void reduce_scatter_block(Next& next, void* send, void* recv, Fint* count, Fint* type, Fint* op, Fint* comm,
                          Fint* ierr) {
  count_call();
  if (!take(send, recv)) {
    fortran_next<void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*)>(next)(send, recv, count, type, op, comm, ierr);
    return;
  }
  *ierr = device_reduce_scatter_block(c_buffer(send), recv, *count, type_f2c(type), op_f2c(op), comm_f2c(comm),
                                      Launch{});
}
void reduce_scatter(Next& next, void* send, void* recv, Fint* counts, Fint* type, Fint* op, Fint* comm,
                    Fint* ierr) {
  count_call();
  if (!take(send, recv)) {
    fortran_next<void (*)(void*, void*, Fint*, Fint*, Fint*, Fint*, Fint*)>(next)(send, recv, counts, type, op, comm,
                                                                                 ierr);
    return;
  }
  *ierr = device_reduce_scatter(c_buffer(send), recv, counts, type_f2c(type), op_f2c(op), comm_f2c(comm), Launch{});
}

}  // namespace

// Every spelling a Fortran compiler gives an external name, each forwarding to the MPI library's
// entry of that same spelling, and Open MPI's C function behind them all (mpi_f08's route).
#define HPCOLLS_FORTRAN_NAME(name, impl, params, ...) \
  HPCOLLS_PMPI_EXPORT void name params {                 \
    static Next next{#name};                             \
    impl(next, __VA_ARGS__);                             \
  }
#define HPCOLLS_FORTRAN_ENTRY(lower, upper, ompi, impl, params, ...) \
  HPCOLLS_FORTRAN_NAME(lower##_, impl, params, __VA_ARGS__)          \
  HPCOLLS_FORTRAN_NAME(lower##__, impl, params, __VA_ARGS__)         \
  HPCOLLS_FORTRAN_NAME(lower, impl, params, __VA_ARGS__)             \
  HPCOLLS_FORTRAN_NAME(upper, impl, params, __VA_ARGS__)             \
  HPCOLLS_FORTRAN_NAME(ompi, impl, params, __VA_ARGS__)
#define HPCOLLS_ARGS(...) __VA_ARGS__

HPCOLLS_FORTRAN_ENTRY(mpi_allreduce, MPI_ALLREDUCE, ompi_allreduce_f, allreduce,
                      (void* s, void* r, Fint* c, Fint* t, Fint* o, Fint* m, Fint* e), HPCOLLS_ARGS(s, r, c, t, o, m, e))
HPCOLLS_FORTRAN_ENTRY(mpi_bcast, MPI_BCAST, ompi_bcast_f, bcast, (void* b, Fint* c, Fint* t, Fint* root, Fint* m, Fint* e),
                      HPCOLLS_ARGS(b, c, t, root, m, e))
HPCOLLS_FORTRAN_ENTRY(mpi_reduce, MPI_REDUCE, ompi_reduce_f, reduce,
                      (void* s, void* r, Fint* c, Fint* t, Fint* o, Fint* root, Fint* m, Fint* e),
                      HPCOLLS_ARGS(s, r, c, t, o, root, m, e))
HPCOLLS_FORTRAN_ENTRY(mpi_allgather, MPI_ALLGATHER, ompi_allgather_f, allgather,
                      (void* s, Fint* sc, Fint* st, void* r, Fint* rc, Fint* rt, Fint* m, Fint* e),
                      HPCOLLS_ARGS(s, sc, st, r, rc, rt, m, e))
HPCOLLS_FORTRAN_ENTRY(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, ompi_reduce_scatter_block_f, reduce_scatter_block,
                      (void* s, void* r, Fint* c, Fint* t, Fint* o, Fint* m, Fint* e), HPCOLLS_ARGS(s, r, c, t, o, m, e))
HPCOLLS_FORTRAN_ENTRY(mpi_reduce_scatter, MPI_REDUCE_SCATTER, ompi_reduce_scatter_f, reduce_scatter,
                      (void* s, void* r, Fint* c, Fint* t, Fint* o, Fint* m, Fint* e), HPCOLLS_ARGS(s, r, c, t, o, m, e))
