// Reduce_scatter, one-shot for small messages: its launcher; the kernel is in
// hpcolls/reduce_scatter/oneshot_small.cuh (LL mode 0 only).
#include "hpcolls/reduce_scatter/oneshot_small.cuh"

namespace hpcolls {

cudaError_t launch_reduce_scatter_oneshot_small(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  if (c.ll_mode != kernels::kSmallMode || a.layout == nullptr) return cudaErrorInvalidValue;
  const uint32_t largest = uint32_t((a.bytes + kChunkBytes - 1) / kChunkBytes);
  const bool send_vec = reinterpret_cast<uintptr_t>(a.send) % kChunkBytes == 0;
  const bool recv_vec = reinterpret_cast<uintptr_t>(a.recv) % kChunkBytes == 0;
  return dispatch(t, op, [&](auto type_tag, auto op_tag) {
    using T = decltype(type_tag);
    constexpr Op kOp = decltype(op_tag)::value;
    auto* kernel = small_kernel_for_ranks(
        c.nranks, [](auto ranks) { return &kernels::reduce_scatter_oneshot_small<T, kOp, decltype(ranks)::value>; });
    return launch_kernel(a, kernel, c, static_cast<const char*>(a.send), static_cast<char*>(a.recv), *a.layout,
                         largest, send_vec, recv_vec, a.collective);
  });
}

}  // namespace hpcolls
