#include "resident_calls.h"

#include <cuda_runtime.h>

#include <exception>
#include <memory>

#include "errors.h"
#include "hpcolls/errors.h"
#include "pmpi_settings.h"

namespace hpcolls_pmpi {

ResidentOutcome run_resident(DeviceComm& dc, const hpcolls::ResidentRequest& call, int* err) {
  const long long idle_us = pmpi_settings().resident_us;
  if (idle_us <= 0 || call.bytes == 0) return ResidentOutcome::NotTaken;
  try {
    if (!dc.resident)
      dc.resident = std::make_unique<hpcolls::ResidentService>(dc.native->device_comm(), dc.device, double(idle_us) * 1e-6);
    if (call.bytes > dc.resident->max_bytes(hpcolls::ResidentKind(call.kind))) return ResidentOutcome::NotTaken;
    // The resident kernel waits for no stream: what may still run on this communicator first.
    if (dc.enqueued_since_wait) {
      dc.native->synchronize();
      dc.enqueued_since_wait = false;
    }
    if (dc.device_struct_given)
      hpcolls::cuda_check(cudaStreamSynchronize(call_stream(dc)), "cudaStreamSynchronize(the communicator's stream)");
    const int status = dc.resident->run(call);
    dc.native->check();  // a time-out recorded by this rank's kernel: CollectiveTimeout naming rank, peer, epoch
    if (status != HPCOLLS_DEVICE_OK) {
      *err = error_codef("hpcolls: the resident kernel returned status %d for this call", status);
      return ResidentOutcome::Failed;
    }
    return ResidentOutcome::Done;
  } catch (const std::exception& e) {
    *err = error_codef("%s", e.what());
    return ResidentOutcome::Failed;
  }
}

}  // namespace hpcolls_pmpi
