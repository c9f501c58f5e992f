#include "hpcolls/peer_scratch.h"

#include <cuda.h>  // types only: the driver is reached through the runtime's entry-point query
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "hpcolls/errors.h"

namespace hpcolls {

namespace {
// Where `ptr` sits inside its driver allocation. CUDA IPC exports whole allocations and opens
// them at their base, so a peer must add this offset (zero unless the driver sub-allocated).
size_t offset_in_allocation(void* ptr) {
  using GetRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  static GetRange get_range = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status;
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 3020, cudaEnableDefault, &status) !=
            cudaSuccess ||
        status != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<GetRange>(fn);
  }();
  if (get_range == nullptr) throw CudaError("hpcolls: cuMemGetAddressRange is not available from the driver");
  CUdeviceptr base = 0;
  size_t size = 0;
  if (get_range(&base, &size, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS)
    throw CudaError("hpcolls: cuMemGetAddressRange failed on the scratch allocation");
  return reinterpret_cast<uintptr_t>(ptr) - uintptr_t(base);
}
}  // namespace

const size_t PeerScratch::kHandleBytes = sizeof(cudaIpcMemHandle_t) + sizeof(size_t);

PeerScratch::PeerScratch(int device, size_t bytes) : device_(device), bytes_(bytes) {
  cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  cuda_check(cudaMalloc(&local_, bytes_), "cudaMalloc(scratch)");
  cuda_check(cudaMemset(local_, 0, bytes_), "cudaMemset(scratch)");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(scratch init)");
}

PeerScratch::~PeerScratch() {
  try {
    release();
  } catch (...) {
    // A destructor must not throw; release() already reported nothing useful to report here.
  }
}

std::string PeerScratch::export_handle() const {
  const size_t offset = offset_in_allocation(local_);
  void* base = static_cast<char*>(local_) - offset;
  cudaIpcMemHandle_t h;
  cuda_check(cudaIpcGetMemHandle(&h, base), "cudaIpcGetMemHandle");
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(reinterpret_cast<const char*>(&offset), sizeof(offset));
  return out;
}

void PeerScratch::open_peers(const std::vector<std::string>& handles, int self) {
  cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  bases_.assign(handles.size(), nullptr);
  mapped_.assign(handles.size(), nullptr);
  for (size_t r = 0; r < handles.size(); ++r) {
    if (int(r) == self) {
      bases_[r] = local_;
      continue;
    }
    if (handles[r].size() != sizeof(cudaIpcMemHandle_t) + sizeof(size_t))
      throw CudaError("hpcolls: malformed CUDA IPC handle from rank " + std::to_string(r));
    cudaIpcMemHandle_t h;
    size_t offset;
    std::memcpy(&h, handles[r].data(), sizeof(h));
    std::memcpy(&offset, handles[r].data() + sizeof(h), sizeof(offset));
    void* base = nullptr;
    cuda_check(cudaIpcOpenMemHandle(&base, h, cudaIpcMemLazyEnablePeerAccess),
               ("cudaIpcOpenMemHandle(rank " + std::to_string(r) + ")").c_str());
    mapped_[r] = base;
    bases_[r] = static_cast<char*>(base) + offset;
  }
}

void PeerScratch::release() {
  if (local_ == nullptr) return;
  (void)cudaSetDevice(device_);
  for (size_t r = 0; r < mapped_.size(); ++r)
    if (mapped_[r] != nullptr) (void)cudaIpcCloseMemHandle(mapped_[r]);
  bases_.clear();
  mapped_.clear();
  (void)cudaFree(local_);
  (void)cudaGetLastError();
  local_ = nullptr;
}

}  // namespace hpcolls
