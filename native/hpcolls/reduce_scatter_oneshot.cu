// Reduce_scatter (and Reduce_scatter_block), one-shot: the default build's launcher (LL mode 0); the kernel is in
// hpcolls/reduce_scatter/oneshot.cuh.
#include "hpcolls/reduce_scatter/oneshot.cuh"

namespace hpcolls {

cudaError_t launch_reduce_scatter_oneshot(const DevComm& c, DType t, Op op, const CollectiveArgs& a) {
  return kernels::launch_reduce_scatter_oneshot<0>(c, t, op, a);
}

}  // namespace hpcolls
