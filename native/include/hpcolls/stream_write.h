// A 32-bit value written to device-visible memory by a stream, after every earlier operation on the
// stream and their memory writes (cuStreamWriteValue32 with its default memory barrier): no kernel
// launched. The PMPI library's host wait writes its completion flag this way, and its resident
// kernel's doorbell (resident_service.h), so that a call is ordered after the caller's stream.
// Header-only (the benchmarks of native/bench use it too); the driver's function is looked up
// once through the runtime, so nothing links the driver library.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hpcolls {

namespace detail {
using WriteValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
inline WriteValue32 write_value32() {
  static const WriteValue32 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult status;
    if (cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &f, 12000, cudaEnableDefault, &status) != cudaSuccess ||
        status != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<WriteValue32>(f);
  }();
  return fn;
}
}  // namespace detail

// Whether this driver has stream memory operations.
inline bool stream_write_available() { return detail::write_value32() != nullptr; }

// Enqueues the write of `value` to `device_address` (device memory, or host memory mapped for the
// device) on `stream`; false where the driver lacks the operation or refuses it (the error cleared).
inline bool stream_write_u32(cudaStream_t stream, void* device_address, uint32_t value) {
  if (!stream_write_available()) return false;
  // Flags 0: a memory barrier before the write, which comes after the stream's earlier work.
  if (detail::write_value32()(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(device_address), value, 0) ==
      CUDA_SUCCESS)
    return true;
  (void)cudaGetLastError();
  return false;
}

}  // namespace hpcolls
