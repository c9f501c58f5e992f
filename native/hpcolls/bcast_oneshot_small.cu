// Bcast, one-shot for small messages: its launcher; the kernel is in hpcolls/bcast/oneshot_small.cuh
// (LL mode 0 only).
#include "hpcolls/bcast/oneshot_small.cuh"

namespace hpcolls {

cudaError_t launch_bcast_oneshot_small(const DevComm& c, const CollectiveArgs& a) {
  if (c.ll_mode != kernels::kSmallMode) return cudaErrorInvalidValue;
  auto* kernel = small_kernel_for_ranks(c.nranks, [](auto ranks) {
    return &kernels::bcast_oneshot_small<decltype(ranks)::value>;
  });
  return launch_kernel(a, kernel, c, static_cast<char*>(a.recv), uint32_t(a.bytes), a.root, a.vec_ok);
}

}  // namespace hpcolls
