// AllReduce, one-shot on the sentinel protocol: the launcher; the kernel is in
// hpcolls/allreduce/oneshot_sentinel.cuh.
#include "hpcolls/allreduce/oneshot_sentinel.cuh"
#include "hpcolls/dispatch.cuh"

namespace hpcolls {

cudaError_t launch_allreduce_oneshot_sentinel(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return launch_allreduce_kernel<0>(c, t, op, a, [](auto type_tag, auto op_tag) {
    return &kernels::allreduce_oneshot_sentinel<decltype(type_tag), decltype(op_tag)::value>;
  });
}

}  // namespace hpcolls
