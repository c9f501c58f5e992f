// Allgather, one-shot for small messages: its launcher; the kernel is in
// hpcolls/allgather/oneshot_small.cuh (LL mode 0 only).
#include "hpcolls/allgather/oneshot_small.cuh"

namespace hpcolls {

cudaError_t launch_allgather_oneshot_small(const DevComm& c, const CollectiveArgs& a) {
  if (c.ll_mode != kernels::kSmallMode) return cudaErrorInvalidValue;
  const bool send_vec = reinterpret_cast<uintptr_t>(a.send) % kChunkBytes == 0;
  const bool recv_vec = reinterpret_cast<uintptr_t>(a.recv) % kChunkBytes == 0 && a.stride % kChunkBytes == 0;
  auto* kernel = small_kernel_for_ranks(c.nranks, [](auto ranks) {
    return &kernels::allgather_oneshot_small<decltype(ranks)::value>;
  });
  return launch_kernel(a, kernel, c, static_cast<const char*>(a.send), static_cast<char*>(a.recv), uint32_t(a.bytes),
                       uint32_t(a.stride), send_vec, recv_vec);
}

}  // namespace hpcolls
