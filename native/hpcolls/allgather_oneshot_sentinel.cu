// Allgather, one-shot on the sentinel protocol: the launcher; the kernel is in
// hpcolls/allgather/oneshot_sentinel.cuh.
#include "hpcolls/allgather/oneshot_sentinel.cuh"

namespace hpcolls {

cudaError_t launch_allgather_oneshot_sentinel(const DevComm& c, const CollectiveArgs& a) {
  return kernels::launch_allgather_oneshot_sentinel(c, a);
}

}  // namespace hpcolls
