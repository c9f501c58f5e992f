// AllReduce, one-shot for small messages: its launcher; the kernel is in
// hpcolls/allreduce/oneshot_small.cuh (LL mode 0 only).
#include "hpcolls/allreduce/oneshot_small.cuh"
#include "hpcolls/dispatch.cuh"

namespace hpcolls {

cudaError_t launch_allreduce_oneshot_small(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return launch_allreduce_kernel<kernels::kSmallMode>(c, t, op, a, [&c](auto type_tag, auto op_tag) {
    using T = decltype(type_tag);
    constexpr Op kOp = decltype(op_tag)::value;
    return small_kernel_for_ranks(
        c.nranks, [](auto ranks) { return &kernels::allreduce_oneshot_small<T, kOp, decltype(ranks)::value>; });
  });
}

}  // namespace hpcolls
