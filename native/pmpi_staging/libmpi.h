// The MPI library this process loaded, and its PMPI_ entry points.
#pragma once

namespace hpcolls_pmpi {

// The address of `name` (a PMPI_ or MPIX_ function) in the loaded MPI library, or nullptr when
// no MPI library is loaded yet or it has no such function.
void* libmpi_symbol(const char* name);

// The address every reference in this process is bound to for `name`, an object the MPI library
// exports (Open MPI's predefined handles: ompi_mpi_double, ompi_mpi_op_sum, ...). A program that
// names MPI_DOUBLE holds its own copy of that object (a copy relocation, as an executable built
// without -fPIC does), and every reference, libmpi's own included, is bound to the copy: libmpi's
// original is never initialized. So the global scope's first definition, else libmpi's own (when
// libmpi is opened privately, as mpi4py opens it, no program copy can exist).
void* libmpi_object(const char* name);

// The file name of the loaded MPI library ("" when none is found).
const char* libmpi_path();

// 1 when the loaded MPI library defines `name` (an MPI_ function), 0 when it does not, -1 when no
// MPI library is loaded. hpcolls_mpi_has, its export, answers hpcolls.staging.pmpi_library.mpi_has.
int libmpi_has(const char* name);

// The definition of `name` (an MPI Fortran entry, mpi_allreduce_ say) that this library stands
// in front of: the next one in the global scope (RTLD_NEXT), else the first loaded object other
// than this library that defines it (an MPI Fortran library opened privately, RTLD_LOCAL, as a
// Python extension written in Fortran may open it); nullptr when none is loaded.
void* next_definition(const char* name);

// next<F>("PMPI_Pack"): the entry as a typed function pointer (nullptr when absent).
template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(libmpi_symbol(name));
}

}  // namespace hpcolls_pmpi
