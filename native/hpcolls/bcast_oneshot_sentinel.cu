// Bcast, one-shot on the sentinel protocol: the launcher; the kernel is in
// hpcolls/bcast/oneshot_sentinel.cuh.
#include "hpcolls/bcast/oneshot_sentinel.cuh"

namespace hpcolls {

cudaError_t launch_bcast_oneshot_sentinel(const DevComm& c, const CollectiveArgs& a) {
  return kernels::launch_bcast_oneshot_sentinel(c, a);
}

}  // namespace hpcolls
