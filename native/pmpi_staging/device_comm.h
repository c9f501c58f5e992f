// One communicator's device state in the PMPI library: its NativeComm (the same class, plan and
// kernels the Python layer uses), set up collectively over PMPI calls at the communicator's first
// collective on device buffers (native/hpcolls' scratch, CUDA IPC handles exchanged, reachability
// probed for real, every step agreed by every rank, as hpcolls/peer_group.py does over mpi4py), and
// freed by an attribute's delete callback when the communicator is freed (MPI_Comm_free, or
// MPI_Finalize for the built-in ones). The stream its blocking calls use, and the host's wait.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "hpcolls/native_comm.h"
#include "hpcolls/resident_service.h"
#include "mpi_opaque.h"

namespace hpcolls_pmpi {

struct DeviceComm {
  std::unique_ptr<hpcolls::NativeComm> native;  // null: the native path is off (why_off says why)
  std::string why_off;
  int device = -1;
  cudaStream_t stream = nullptr;  // hpcolls_set_stream(); else the process's default (pmpi.h)
  bool has_stream = false;
  // The host's wait for a blocking call (HPCOLLS_PMPI_WAIT=flag): the stream writes `calls` into
  // this host-mapped word after the kernel, and the host polls it.
  volatile unsigned* done = nullptr;
  void* done_device = nullptr;
  unsigned calls = 0;
  // The resident kernel (HPCOLLS_PMPI_RESIDENT_US), made at the first call it takes; it exchanges
  // through native's scratch, so it goes first when the communicator is freed.
  std::unique_ptr<hpcolls::ResidentService> resident;
  bool enqueued_since_wait = false;  // an enqueued call may still run: a resident call waits for it first
  ~DeviceComm();
};

// The communicator's device state, set up (collectively: every rank must make the same call with
// device buffers, MPI's rule) at its first device call. device: the CUDA device of the call's
// buffers. Returns MPI_SUCCESS, or an error code (a different device than at set-up, or MPI failing).
int device_comm(Handle comm, int device, DeviceComm** out);

// The stream a call on `dc` runs on: its own, else the process's default (cudaStreamLegacy unless
// hpcolls_set_default_stream() named another).
cudaStream_t call_stream(const DeviceComm& dc);
void set_default_stream(cudaStream_t stream);

// Waits on the host for the call just launched on `stream`, by the mapped flag or a stream
// synchronize (HPCOLLS_PMPI_WAIT), then raises a kernel's time-out (NativeComm::check()).
void wait_for_call(DeviceComm& dc, cudaStream_t stream);

}  // namespace hpcolls_pmpi
