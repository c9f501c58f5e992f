// Bcast, one-shot: the default build's launcher (LL mode 0); the kernel is in
// hpcolls/bcast/oneshot.cuh.
#include "hpcolls/bcast/oneshot.cuh"

namespace hpcolls {

cudaError_t launch_bcast_oneshot(const DevComm& c, const CollectiveArgs& a) { return kernels::launch_bcast_oneshot<0>(c, a); }

}  // namespace hpcolls
