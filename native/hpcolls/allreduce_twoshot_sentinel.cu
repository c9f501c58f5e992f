// AllReduce, two-shot on the sentinel protocol: the launcher; the kernel is in
// hpcolls/allreduce/twoshot_sentinel.cuh.
#include "hpcolls/allreduce/twoshot_sentinel.cuh"

namespace hpcolls {

cudaError_t launch_allreduce_twoshot_sentinel(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return kernels::launch_twoshot_sentinel(c, t, op, a);
}

}  // namespace hpcolls
