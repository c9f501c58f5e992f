// AllReduce, two-shot over LL128 tiles: the launcher; the kernel is in
// hpcolls/allreduce/twoshot_ll128.cuh.
#include "hpcolls/allreduce/twoshot_ll128.cuh"

namespace hpcolls {

cudaError_t launch_allreduce_twoshot_ll128(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return kernels::launch_twoshot_ll128(c, t, op, a);
}

}  // namespace hpcolls
