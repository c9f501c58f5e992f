// MPI's collectives other than the six the kernels take, staged through host memory: the device
// paths of their blocking entry points (staged_collective_entry_points.cpp) and of their
// nonblocking forms (nonblocking_collective_entry_points.cpp), which run them blocking. `pmpi`
// is the blocking PMPI_ function the staged call reaches.
#pragma once

#include "mpi_opaque.h"

namespace hpcolls_pmpi {

using GatherFn = int (*)(const void*, int, Handle, void*, int, Handle, int, Handle);
using GathervFn = int (*)(const void*, int, Handle, void*, const int*, const int*, Handle, int, Handle);
using ScatterFn = int (*)(const void*, int, Handle, void*, int, Handle, int, Handle);
using ScattervFn = int (*)(const void*, const int*, const int*, Handle, void*, int, Handle, int, Handle);
using AllgathervFn = int (*)(const void*, int, Handle, void*, const int*, const int*, Handle, Handle);
using AlltoallFn = int (*)(const void*, int, Handle, void*, int, Handle, Handle);
using AlltoallvFn = int (*)(const void*, const int*, const int*, Handle, void*, const int*, const int*, Handle, Handle);
using ScanFn = int (*)(const void*, void*, int, Handle, Handle, Handle);  // Scan and Exscan

// Whether either buffer is device memory (device_memory.h's cheap checks first).
bool either_on_device(const void* a, const void* b);

int stage_gather(GatherFn pmpi, const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                 int root, Handle comm);
int stage_gatherv(GathervFn pmpi, const void* send, int scount, Handle stype, void* recv, const int* rcounts,
                  const int* displs, Handle rtype, int root, Handle comm);
int stage_scatter(ScatterFn pmpi, const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                  int root, Handle comm);
int stage_scatterv(ScattervFn pmpi, const void* send, const int* scounts, const int* displs, Handle stype, void* recv,
                   int rcount, Handle rtype, int root, Handle comm);
int stage_allgatherv(AllgathervFn pmpi, const void* send, int scount, Handle stype, void* recv, const int* rcounts,
                     const int* displs, Handle rtype, Handle comm);
int stage_alltoall(AlltoallFn pmpi, const void* send, int scount, Handle stype, void* recv, int rcount, Handle rtype,
                   Handle comm);
int stage_alltoallv(AlltoallvFn pmpi, const void* send, const int* scounts, const int* sdispls, Handle stype,
                    void* recv, const int* rcounts, const int* rdispls, Handle rtype, Handle comm);
// name: "MPI_Scan" or "MPI_Exscan", for the staging's messages.
int stage_scan(ScanFn pmpi, const char* name, const void* send, void* recv, int count, Handle type, Handle op,
               Handle comm);

}  // namespace hpcolls_pmpi
