// AllReduce, two-shot on the sentinel protocol: the launcher; the kernel is in
// hpcolls/allreduce/twoshot_sentinel.cuh.
#include "hpcolls/allreduce/twoshot_sentinel.cuh"
#include "hpcolls/dispatch.cuh"

namespace hpcolls {

cudaError_t launch_allreduce_twoshot_sentinel(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return launch_allreduce_kernel<0>(c, t, op, a, [](auto type_tag, auto op_tag) {
    return &kernels::allreduce_twoshot_sentinel<decltype(type_tag), decltype(op_tag)::value>;
  });
}

}  // namespace hpcolls
