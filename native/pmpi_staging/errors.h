// MPI error codes that carry hpcolls' own messages, so that what this library refuses or fails
// at reaches the program as an MPI error (mpi4py raises MPI.Exception with the text) rather than
// as a crash.
#pragma once

namespace hpcolls_pmpi {

// A code registered with the MPI library (MPI_Add_error_class/code/string) on first use of each
// distinct message; the message is "hpcolls PMPI staging: <what>". If the MPI library cannot
// register one, the process ends with the message on stderr (an unreportable failure is never
// returned as success).
int error_code(const char* what);

// "<function>: <problem> (CUDA error <n>)" and the like, formatted, then error_code.
int error_codef(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace hpcolls_pmpi
