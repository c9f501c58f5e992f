// The C API of native/include/hpcolls/pmpi.h: streams for the blocking calls, and the
// stream-enqueued collectives (no host wait, capturable into CUDA graphs). Defined on opaque
// handles (mpi_opaque.h) as the entry points are; the header gives them MPI's types.
#include <cuda_runtime.h>

#include "device_collectives.h"
#include "device_comm.h"
#include "device_memory.h"
#include "errors.h"
#include "mpi_abi.h"
#include "mpi_opaque.h"

using namespace hpcolls_pmpi;

namespace {

// The device of the buffer the call is about; an error code when it is not device memory.
int device_of(const void* buf, Handle comm, const char* what) {
  const DeviceBuffer where = locate(buf);
  if (!where.on_device || where.device < 0)
    return comm_error(comm, error_codef("%s: the buffer is not device memory", what));
  return kSuccess;
}

Launch enqueued(cudaStream_t stream) { return Launch{true, stream}; }

}  // namespace

HPCOLLS_PMPI_EXPORT int hpcolls_set_stream(Handle comm, cudaStream_t stream) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return comm_error(comm, error_code("hpcolls_set_stream: no CUDA device"));
  DeviceComm* dc = nullptr;
  int err = device_comm(comm, device, &dc);
  if (err != kSuccess) return comm_error(comm, err);
  dc->stream = stream;
  dc->has_stream = true;
  return kSuccess;
}

HPCOLLS_PMPI_EXPORT int hpcolls_set_default_stream(cudaStream_t stream) {
  set_default_stream(stream);
  return kSuccess;
}

HPCOLLS_PMPI_EXPORT int hpcolls_allreduce_enqueue(const void* send, void* recv, int count, Handle datatype, Handle op,
                                                  Handle comm, cudaStream_t stream) {
  if (int err = device_of(recv, comm, "hpcolls_allreduce_enqueue")) return err;
  return device_allreduce(send, recv, count, datatype, op, comm, enqueued(stream));
}

HPCOLLS_PMPI_EXPORT int hpcolls_bcast_enqueue(void* buf, int count, Handle datatype, int root, Handle comm,
                                              cudaStream_t stream) {
  if (int err = device_of(buf, comm, "hpcolls_bcast_enqueue")) return err;
  return device_bcast(buf, count, datatype, root, comm, enqueued(stream));
}

HPCOLLS_PMPI_EXPORT int hpcolls_reduce_enqueue(const void* send, void* recv, int count, Handle datatype, Handle op,
                                               int root, Handle comm, cudaStream_t stream) {
  const MpiAbi* abi = mpi_abi();
  const void* decides = abi != nullptr && send == abi->in_place ? recv : send;  // in place at the root
  if (int err = device_of(decides, comm, "hpcolls_reduce_enqueue")) return err;
  return device_reduce(send, recv, count, datatype, op, root, comm, enqueued(stream));
}

HPCOLLS_PMPI_EXPORT int hpcolls_allgather_enqueue(const void* send, int send_count, Handle send_type, void* recv,
                                                  int recv_count, Handle recv_type, Handle comm, cudaStream_t stream) {
  if (int err = device_of(recv, comm, "hpcolls_allgather_enqueue")) return err;
  return device_allgather(send, send_count, send_type, recv, recv_count, recv_type, comm, enqueued(stream));
}

HPCOLLS_PMPI_EXPORT int hpcolls_reduce_scatter_block_enqueue(const void* send, void* recv, int recv_count,
                                                             Handle datatype, Handle op, Handle comm,
                                                             cudaStream_t stream) {
  if (int err = device_of(recv, comm, "hpcolls_reduce_scatter_block_enqueue")) return err;
  return device_reduce_scatter_block(send, recv, recv_count, datatype, op, comm, enqueued(stream));
}

HPCOLLS_PMPI_EXPORT int hpcolls_reduce_scatter_enqueue(const void* send, void* recv, const int* recv_counts,
                                                       Handle datatype, Handle op, Handle comm, cudaStream_t stream) {
  if (int err = device_of(recv, comm, "hpcolls_reduce_scatter_enqueue")) return err;
  return device_reduce_scatter(send, recv, recv_counts, datatype, op, comm, enqueued(stream));
}

HPCOLLS_PMPI_EXPORT int hpcolls_device_comm(Handle comm, hpcolls_device_comm_t* out) {
  if (out == nullptr) return comm_error(comm, error_code("hpcolls_device_comm: no struct to fill"));
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return comm_error(comm, error_code("hpcolls_device_comm: no CUDA device"));
  DeviceComm* dc = nullptr;
  if (int err = device_comm(comm, device, &dc)) return comm_error(comm, err);
  if (!dc->native)
    return comm_error(comm, error_codef("hpcolls_device_comm: no native path on this communicator (%s)", dc->why_off.c_str()));
  try {
    *out = dc->native->device_comm();  // the one implementation, NativeComm's (native_comm.h)
  } catch (const std::exception& e) {
    return comm_error(comm, error_codef("hpcolls_device_comm: %s", e.what()));
  }
  return kSuccess;
}
