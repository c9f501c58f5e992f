// AllReduce, one-shot for small messages: its launcher; the kernel is in
// hpcolls/allreduce/oneshot_small.cuh (LL mode 0 only).
#include "hpcolls/allreduce/oneshot_small.cuh"
#include "hpcolls/dispatch.cuh"

namespace hpcolls {

cudaError_t launch_allreduce_oneshot_small(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return launch_allreduce_kernel<kernels::kSmallMode>(c, t, op, a, [&c](auto type_tag, auto op_tag) {
    using T = decltype(type_tag);
    constexpr Op kOp = decltype(op_tag)::value;
    static_assert(sizeof(kSmallOneShotRanks) == 3 * sizeof(int) && kSmallOneShotRanks[0] == 2 &&
                      kSmallOneShotRanks[1] == 4 && kSmallOneShotRanks[2] == 8,
                  "the cases below are kSmallOneShotRanks");
    switch (c.nranks) {  // oneshot_small_fits admits these counts only
      case 2: return &kernels::allreduce_oneshot_small<T, kOp, 2>;
      case 4: return &kernels::allreduce_oneshot_small<T, kOp, 4>;
      default: return &kernels::allreduce_oneshot_small<T, kOp, 8>;
    }
  });
}

}  // namespace hpcolls
