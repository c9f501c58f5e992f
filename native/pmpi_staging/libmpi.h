// The MPI library this process loaded, and its PMPI_ entry points.
#pragma once

namespace hpcolls_pmpi {

// The address of `name` (a PMPI_ or MPIX_ function) in the loaded MPI library, or nullptr when
// no MPI library is loaded yet or it has no such function.
void* libmpi_symbol(const char* name);

// The file name of the loaded MPI library ("" when none is found).
const char* libmpi_path();

// next<F>("PMPI_Pack"): the entry as a typed function pointer (nullptr when absent).
template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(libmpi_symbol(name));
}

}  // namespace hpcolls_pmpi
