#include "device_memory.h"

#include <cuda.h>  // types and enum values only: nothing is linked, the driver is opened at run time
#include <dlfcn.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "loaded_objects.h"

namespace hpcolls_pmpi {
namespace detail {
std::atomic<bool> g_device_memory_possible{false};
}  // namespace detail

namespace {

// The driver functions used here (their exported, versioned names).
struct Driver {
  CUresult (*pointer_get_attributes)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
  CUresult (*ctx_push)(CUcontext);
  CUresult (*ctx_pop)(CUcontext*);
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t);
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, size_t);
  CUresult (*stream_synchronize)(CUstream);
};

template <class F>
bool resolve(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

std::atomic<const Driver*> g_driver{nullptr};
std::mutex g_looking;  // one thread at a time rescans the loaded objects

// The driver once this process has loaded it (RTLD_NOLOAD: never loaded by this library, so a
// host-only process does not start the driver). Looked for again only when an object was loaded
// since the last look (cupy or the CUDA runtime may load the driver after the first MPI call).
const Driver* driver() {
  if (const Driver* d = g_driver.load(std::memory_order_acquire)) return d;
  if (!detail::loaded_objects_changed()) return nullptr;
  std::lock_guard<std::mutex> lock(g_looking);
  if (const Driver* d = g_driver.load(std::memory_order_acquire)) return d;
  detail::rescan_loaded_objects();
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  auto* d = new Driver{};
  if (!(resolve(lib, "cuPointerGetAttributes", d->pointer_get_attributes) &&
        resolve(lib, "cuCtxPushCurrent_v2", d->ctx_push) && resolve(lib, "cuCtxPopCurrent_v2", d->ctx_pop) &&
        resolve(lib, "cuMemcpyDtoH_v2", d->memcpy_dtoh) && resolve(lib, "cuMemcpyHtoD_v2", d->memcpy_htod) &&
        resolve(lib, "cuStreamSynchronize", d->stream_synchronize))) {
    delete d;
    return nullptr;  // a driver without these is no driver we can use: everything is host memory
  }
  g_driver.store(d, std::memory_order_release);
  detail::g_device_memory_possible.store(true, std::memory_order_relaxed);
  return d;
}

// Pages (4 KiB) seen as ordinary host memory, direct-mapped by page number. A stale entry would
// need a page of pageable host memory to be unmapped and the driver to place device memory at
// the same address; the driver allocates inside the address ranges it reserved, so only a page
// it never knew is cached.
constexpr int kPageShift = 12;
constexpr std::size_t kHostPages = 512;
std::atomic<std::uintptr_t> g_host_pages[kHostPages];

bool host_page_known(std::uintptr_t page) {
  return g_host_pages[page % kHostPages].load(std::memory_order_relaxed) == page + 1;
}
void remember_host_page(std::uintptr_t page) {
  g_host_pages[page % kHostPages].store(page + 1, std::memory_order_relaxed);
}

// The test hook's range (see device_memory.h); owner is set to this marker for it.
std::atomic<std::uintptr_t> g_pretend_base{0};
std::atomic<std::size_t> g_pretend_bytes{0};
char g_pretend_owner;

bool pretended(const void* ptr) {
  auto p = reinterpret_cast<std::uintptr_t>(ptr);
  std::uintptr_t base = g_pretend_base.load();
  return base != 0 && p >= base && p - base < g_pretend_bytes.load();
}

int pretend_copy(void* to, const void* from, std::size_t bytes) {
  auto base = reinterpret_cast<void*>(g_pretend_base.load());
  std::size_t length = g_pretend_bytes.load();
  if (mprotect(base, length, PROT_READ | PROT_WRITE) != 0) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(to, from, bytes);
  return mprotect(base, length, PROT_NONE) == 0 ? 0 : CUDA_ERROR_INVALID_VALUE;
}

// Runs copy with the buffer's context current (the calling thread may have another, or none),
// then waits for it: a copy from pageable host memory may return before it reaches the device.
template <class Copy>
int in_context(const DeviceBuffer& where, Copy copy) {
  const Driver* d = driver();
  if (d == nullptr) return CUDA_ERROR_DEINITIALIZED;
  // Stream-ordered allocations report no context: the thread's current one serves then.
  auto context = static_cast<CUcontext>(where.owner);
  if (context != nullptr) {
    CUresult pushed = d->ctx_push(context);
    if (pushed != CUDA_SUCCESS) return pushed;
  }
  CUresult status = copy(*d);
  if (status == CUDA_SUCCESS) status = d->stream_synchronize(nullptr);
  if (context != nullptr) {
    CUcontext popped = nullptr;
    CUresult pop_status = d->ctx_pop(&popped);
    if (status == CUDA_SUCCESS) status = pop_status;
  }
  return status;
}

}  // namespace

DeviceBuffer detail::locate_slow(const void* ptr) {
  if (pretended(ptr)) return {true, &g_pretend_owner, -1};
  const auto page = reinterpret_cast<std::uintptr_t>(ptr) >> kPageShift;
  if (host_page_known(page)) return {};
  const Driver* d = driver();
  if (d == nullptr) return {};
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  // Wide, zeroed slots: the driver writes an unsigned int, a bool, a CUcontext and an int into them.
  unsigned long long memory_type = 0, managed = 0, ordinal = 0;
  CUcontext context = nullptr;
  void* data[] = {&memory_type, &managed, &context, &ordinal};
  // Host memory the driver does not know reads as type 0; an error (driver not initialized in
  // this process, say) means no device memory here either.
  if (d->pointer_get_attributes(4, attributes, data, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS)
    return {};
  if (static_cast<unsigned>(memory_type) == 0) {
    remember_host_page(page);
    return {};
  }
  bool device = static_cast<unsigned>(memory_type) == CU_MEMORYTYPE_DEVICE && (managed & 0xff) == 0;
  return device ? DeviceBuffer{true, context, static_cast<int>(ordinal)} : DeviceBuffer{};
}

int copy_to_host(void* host, const void* device, std::size_t bytes, const DeviceBuffer& where) {
  if (where.owner == &g_pretend_owner) return pretend_copy(host, device, bytes);
  return in_context(where, [&](const Driver& d) {
    return d.memcpy_dtoh(host, reinterpret_cast<CUdeviceptr>(device), bytes);
  });
}

int copy_to_device(void* device, const void* host, std::size_t bytes, const DeviceBuffer& where) {
  if (where.owner == &g_pretend_owner) return pretend_copy(device, host, bytes);
  return in_context(where, [&](const Driver& d) {
    return d.memcpy_htod(reinterpret_cast<CUdeviceptr>(device), host, bytes);
  });
}

}  // namespace hpcolls_pmpi

extern "C" void hpcolls_pmpi_staging_pretend_device(void* base, std::size_t bytes) {
  hpcolls_pmpi::g_pretend_bytes.store(base != nullptr ? bytes : 0);
  hpcolls_pmpi::g_pretend_base.store(bytes != 0 ? reinterpret_cast<std::uintptr_t>(base) : 0);
  if (base != nullptr && bytes != 0) hpcolls_pmpi::detail::g_device_memory_possible.store(true);
}
