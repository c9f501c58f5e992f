// AllReduce, one-shot: the default build's launcher (LL mode 0); the kernel is in
// hpcolls/allreduce/oneshot.cuh.
#include "hpcolls/allreduce/oneshot.cuh"

namespace hpcolls {

cudaError_t launch_allreduce_oneshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return kernels::launch_oneshot<0>(c, t, op, a);
}

}  // namespace hpcolls
