// AllReduce, one-shot over LL128 tiles: the launcher; the kernel is in
// hpcolls/allreduce/oneshot_ll128.cuh.
#include "hpcolls/allreduce/oneshot_ll128.cuh"

namespace hpcolls {

cudaError_t launch_allreduce_oneshot_ll128(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return kernels::launch_oneshot_ll128(c, t, op, a);
}

}  // namespace hpcolls
