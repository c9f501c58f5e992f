// The few MPI types this library handles, declared without any MPI header, so that one build
// runs under Open MPI 4 and 5 and MPICH alike (the GPU machine's Open MPI 4.1 is not the Open MPI
// 5 this library is built beside).
//
// Why passing handles through opaquely is safe: an MPI handle (MPI_Comm, MPI_Datatype, MPI_Op,
// MPI_Message, MPI_File, MPI_Request) is a pointer in Open MPI and a 32-bit int in MPICH. The
// library never looks inside one: it receives it from its caller and hands it, unchanged, to the
// PMPI_ entry of the same name. On x86-64 and aarch64 (System V / AAPCS64, little-endian) an int
// and a pointer argument both travel in one integer register or one 8-byte stack slot, and a
// callee that takes an int reads the low 32 bits, which are exactly the bits its caller wrote;
// declaring the parameter pointer-sized here therefore forwards the same value either way.
// Status and request objects are only touched through pointers and MPI's own conversion
// functions (completed_request.cpp says how). MPI_Aint is pointer-sized, MPI_Offset 64 bits and
// MPI_SUCCESS 0 in all three. The library uses no MPI constant (no MPI_BYTE, no MPI_COMM_SELF),
// and calls only PMPI_ functions found in the loaded MPI library at run time (libmpi.cpp).
#pragma once

#include <cstdint>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "hpcolls' PMPI staging library passes MPI handles as pointer-sized values: little-endian only"
#endif

namespace hpcolls_pmpi {

using Handle = void*;            // any MPI handle, passed by value
using Aint = std::intptr_t;      // MPI_Aint
using Offset = long long;        // MPI_Offset
constexpr int kSuccess = 0;      // MPI_SUCCESS

}  // namespace hpcolls_pmpi

#define HPCOLLS_PMPI_EXPORT extern "C" __attribute__((visibility("default")))
