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
    static_assert(sizeof(kSmallOneShotRanks) == 3 * sizeof(int) && kSmallOneShotRanks[0] == 2 &&
                      kSmallOneShotRanks[1] == 4 && kSmallOneShotRanks[2] == 8,
                  "the cases below are kSmallOneShotRanks");
    auto* kernel = c.nranks == 2   ? &kernels::reduce_scatter_oneshot_small<T, kOp, 2>
                   : c.nranks == 4 ? &kernels::reduce_scatter_oneshot_small<T, kOp, 4>
                                   : &kernels::reduce_scatter_oneshot_small<T, kOp, 8>;  // oneshot_small_fits admits these
    return launch_kernel(a, kernel, c, static_cast<const char*>(a.send), static_cast<char*>(a.recv), *a.layout,
                         largest, send_vec, recv_vec, a.collective);
  });
}

}  // namespace hpcolls
