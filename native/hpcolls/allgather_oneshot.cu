// Allgather, one-shot: the default build's launcher (LL mode 0); the kernel is in
// hpcolls/allgather/oneshot.cuh.
#include "hpcolls/allgather/oneshot.cuh"

namespace hpcolls {

cudaError_t launch_allgather_oneshot(const DevComm& c, const CollectiveArgs& a) {
  return kernels::launch_allgather_oneshot<0>(c, a);
}

}  // namespace hpcolls
