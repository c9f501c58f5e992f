// Blocking collectives on device buffers run by the communicator's resident kernel
// (hpcolls/resident_service.h) instead of a kernel launch each: the opt-in HPCOLLS_PMPI_RESIDENT_US
// (docs/DROP_IN.md#resident). Whether a call goes there is decided from the setting, the call's
// arguments and the communicator alone, so every rank decides alike (the resident kernel's exchange
// and the launched kernels' differ, and must never meet in one call).
#pragma once

#include "device_comm.h"
#include "hpcolls/resident_service.h"

namespace hpcolls_pmpi {

enum class ResidentOutcome { NotTaken, Done, Failed };

// Runs `call` on dc's resident kernel (made at the first call it takes) when the setting is on and
// the call fits; Failed with *err set (a time-out: CollectiveTimeout's message) otherwise.
ResidentOutcome run_resident(DeviceComm& dc, const hpcolls::ResidentRequest& call, int* err);

}  // namespace hpcolls_pmpi
