#include "resident_calls.h"

#include <exception>
#include <memory>

#include "errors.h"
#include "hpcolls/errors.h"
#include "pmpi_settings.h"

namespace hpcolls_pmpi {

ResidentOutcome run_resident(DeviceComm& dc, const hpcolls::ResidentRequest& call, int* err) {
  const long long idle_us = pmpi_settings().resident_us;
  // Off, or this driver cannot ring the doorbell (the same on every rank of a node's driver).
  if (idle_us <= 0 || call.bytes == 0 || !hpcolls::ResidentService::available()) return ResidentOutcome::NotTaken;
  try {
    if (!dc.resident)
      dc.resident = std::make_unique<hpcolls::ResidentService>(dc.native->device_comm(), dc.device, double(idle_us) * 1e-6);
    if (call.bytes > dc.resident->max_bytes(hpcolls::ResidentKind(call.kind))) return ResidentOutcome::NotTaken;
    // The doorbell rings after the call stream's earlier work (the program's, and the device API
    // kernels it launched there); an enqueued call may be on another stream: waited for first.
    if (dc.enqueued_since_wait) {
      dc.native->synchronize();
      dc.enqueued_since_wait = false;
    }
    const int status = dc.resident->run(call, call_stream(dc));
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
