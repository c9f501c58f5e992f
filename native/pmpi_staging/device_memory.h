// Where a buffer lives, and copies between device and host memory, through the CUDA driver API
// loaded lazily: the library needs no CUDA library to load, and a process that has not loaded
// the driver (no GPU, or a host-only program) holds no device memory, so all of its buffers are
// host memory and go to MPI unchanged.
//
// The answer for host memory is made cheap, since every interposed MPI call asks it for each of
// its buffers (host calls must cost <= 50 ns more than MPI's own; tests/pmpi/host_overhead.c
// measures it), in this order:
//   1. a pointer below 4096 or all ones (NULL, MPI_BOTTOM, MPI_IN_PLACE): no buffer to move;
//   2. no CUDA driver in the process (nor the test hook's pretence): host. Whether the driver has
//      been loaded since the last look costs two loads: the dynamic linker's list of loaded objects
//      only grows at its tail, so a tail without a successor means nothing new was loaded
//      (loaded_objects.cpp);
//   3. a page already seen as ordinary host memory (one the driver does not know): host, from a
//      small direct-mapped cache; only pageable memory is cached, never memory the driver
//      allocated (pinned, managed), whose addresses it may reuse for device memory;
//   4. else the driver is asked (cuPointerGetAttributes).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loaded_objects.h"

namespace hpcolls_pmpi {

// Device memory that MPI must not be given (CUDA device allocations; managed memory counts as
// host, as any MPI can read it). owner: what the copies need to reach it (the pointer's CUDA
// context), opaque here; device: its CUDA device ordinal (-1 for the test hook's pretence).
struct DeviceBuffer {
  bool on_device = false;
  void* owner = nullptr;
  int device = -1;
};

namespace detail {
extern std::atomic<bool> g_device_memory_possible;  // the driver is loaded, or the test hook pretends
DeviceBuffer locate_slow(const void* ptr);
}  // namespace detail

inline bool no_buffer(const void* ptr) {
  auto p = reinterpret_cast<std::uintptr_t>(ptr);
  return p < 4096 || p == ~std::uintptr_t(0);
}

inline DeviceBuffer locate(const void* ptr) {
  if (no_buffer(ptr)) return {};
  if (!detail::g_device_memory_possible.load(std::memory_order_relaxed) && !detail::loaded_objects_changed())
    return {};
  return detail::locate_slow(ptr);
}

// Synchronous copies (the caller synchronized its streams before handing the buffer to MPI, as
// mpi4py requires); 0 on success, else the CUDA error number.
int copy_to_host(void* host, const void* device, std::size_t bytes, const DeviceBuffer& where);
int copy_to_device(void* device, const void* host, std::size_t bytes, const DeviceBuffer& where);

}  // namespace hpcolls_pmpi

// Test hook (tests/pmpi_staging_calls.py, run by tests/cpu/test_hpcolls_pmpi_staging.py, and the C
// tests under tests/pmpi): makes [base, base + bytes) count as device memory on a machine without
// a GPU. The caller maps that range with no access (mprotect PROT_NONE), so MPI touching it crashes
// as it would on a device pointer; the library's copies open it for the length of each copy.
// bytes = 0 ends the pretence.
extern "C" __attribute__((visibility("default"))) void hpcolls_pmpi_staging_pretend_device(void* base,
                                                                                          std::size_t bytes);
