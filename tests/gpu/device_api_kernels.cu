// Kernels of tests/gpu/test_hpcolls_device_api_gpu.py: each calls hpcolls' device API
// (native/include/hpcolls/device/collectives.cuh) on a communicator whose struct it reads from
// device memory (DeviceComm.to_device). The test compiles this file with cupy.RawModule (nvcc)
// after generating one extern "C" allreduce entry per (type, op), and grid-scope ones for a few.
#include <hpcolls/device/collectives.cuh>

namespace dev = hpcolls::device;
using hpcolls::Op;

// status[0]: the operation's status, written by one thread (every thread gets the same).
template <typename T, Op OP>
__device__ void run_allreduce(const hpcolls_device_comm_t* c, const void* send, void* recv, unsigned long long n,
                              int* status) {
  const dev::Status s = dev::allreduce<OP>(*c, static_cast<const T*>(send), static_cast<T*>(recv), n);
  if (threadIdx.x + threadIdx.y + threadIdx.z == 0) *status = int(s);
}

// Grid scope (a cooperative launch): status[blockIdx.x] from each block's first thread, so the
// test sees that every block returned the same.
template <typename T, Op OP>
__device__ void run_allreduce_grid(const hpcolls_device_comm_t* c, const void* send, void* recv,
                                   unsigned long long n, int* status) {
  const dev::Status s = dev::allreduce_grid<OP>(*c, static_cast<const T*>(send), static_cast<T*>(recv), n);
  if (threadIdx.x == 0) status[blockIdx.x] = int(s);
}

extern "C" __global__ void broadcast_bytes(const hpcolls_device_comm_t* c, unsigned char* buf, unsigned long long n,
                                           int root, int* status) {
  const dev::Status s = dev::broadcast(*c, buf, n, root);
  if (threadIdx.x == 0) *status = int(s);
}

extern "C" __global__ void allgather_bytes(const hpcolls_device_comm_t* c, const unsigned char* send,
                                           unsigned char* recv, unsigned long long n, int* status) {
  const dev::Status s = dev::allgather(*c, send, recv, n);
  if (threadIdx.x == 0) *status = int(s);
}

// The graph test's step, several operations in one launch: x += 1 (this replay's input), then
// sum = allreduce(x), acc += sum, gathered = allgather(x[0:m]), then rank `root`'s x[0:m] broadcast
// into b, acc_b += b. status: the first status that was not Ok (0: all were).
extern "C" __global__ void replay_step(const hpcolls_device_comm_t* c, long long* x, long long* sum,
                                       long long* acc, long long* gathered, long long* b, long long* acc_b, int n,
                                       int m, int root, int* status) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] += 1;
  dev::Status s = dev::allreduce<Op::Sum>(*c, x, sum, n);
  for (int i = threadIdx.x; s == dev::Status::Ok && i < n; i += blockDim.x) acc[i] += sum[i];
  if (s == dev::Status::Ok) s = dev::allgather(*c, x, gathered, m);
  for (int i = threadIdx.x; i < m; i += blockDim.x) b[i] = c->rank == root ? x[i] : -1;
  if (s == dev::Status::Ok) s = dev::broadcast(*c, b, m, root);
  for (int i = threadIdx.x; s == dev::Status::Ok && i < m; i += blockDim.x) acc_b[i] += b[i];
  if (threadIdx.x == 0 && s != dev::Status::Ok && *status == 0) *status = int(s);
}

// What a skipping rank launches instead of an operation: nothing of the communicator.
extern "C" __global__ void no_operation(int* status) {
  if (threadIdx.x == 0) *status = 0;
}
