// Where a buffer lives, and copies between device and host memory, through the CUDA driver API
// loaded lazily: the library needs no CUDA library to load, and a process that has not loaded
// the driver (no GPU, or a host-only program) holds no device memory, so all of its buffers are
// host memory and go to MPI unchanged.
#pragma once

#include <cstddef>

namespace hpcolls_pmpi {

// Device memory that MPI must not be given (CUDA device allocations; managed memory counts as
// host, as any MPI can read it). owner: what the copies need to reach it (the pointer's CUDA
// context), opaque here.
struct DeviceBuffer {
  bool on_device = false;
  void* owner = nullptr;
};

DeviceBuffer locate(const void* ptr);

// Synchronous copies (the caller synchronized its streams before handing the buffer to MPI, as
// mpi4py requires); 0 on success, else the CUDA error number.
int copy_to_host(void* host, const void* device, std::size_t bytes, const DeviceBuffer& where);
int copy_to_device(void* device, const void* host, std::size_t bytes, const DeviceBuffer& where);

}  // namespace hpcolls_pmpi

// Test hook (tests/pmpi_staging_calls.py, run by tests/cpu/test_hpcolls_pmpi_staging.py): makes
// [base, base + bytes) count as device memory on a machine without a GPU. The caller maps that
// range with no access (mprotect PROT_NONE), so MPI touching it crashes as it would on a device
// pointer; the library's copies open it for the length of each copy. bytes = 0 ends the pretence.
extern "C" __attribute__((visibility("default"))) void hpcolls_pmpi_staging_pretend_device(void* base,
                                                                                          std::size_t bytes);
