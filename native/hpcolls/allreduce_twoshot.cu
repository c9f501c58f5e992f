// AllReduce, two-shot: the default build's launcher (LL mode 0); the kernel is in
// hpcolls/allreduce/twoshot.cuh.
#include "hpcolls/allreduce/twoshot.cuh"

namespace hpcolls {

cudaError_t launch_allreduce_twoshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return kernels::launch_twoshot<0>(c, t, op, a);
}

}  // namespace hpcolls
