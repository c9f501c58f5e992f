// AllReduce, one-shot on the sentinel protocol: the launcher; the kernel is in
// hpcolls/allreduce/oneshot_sentinel.cuh.
#include "hpcolls/allreduce/oneshot_sentinel.cuh"

namespace hpcolls {

cudaError_t launch_allreduce_oneshot_sentinel(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return kernels::launch_oneshot_sentinel(c, t, op, a);
}

}  // namespace hpcolls
