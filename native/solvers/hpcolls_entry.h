// The solver's side of hpcolls' C entry (hpcolls/c_api.h): one communicator's handle and the
// function table it is called through, and the failure it reports as an exception.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "hpcolls/c_api.h"

namespace solvers {

// A call through the C entry that failed: `status` is one of hpcolls_status below zero.
struct HpcollsCallError : std::runtime_error {
  HpcollsCallError(int status, const std::string& what) : std::runtime_error(what), status(status) {}
  int status;
};

// Empty (api == nullptr) where there is no native path: every AllReduce then falls back.
struct HpcollsComm {
  const hpcolls_c_api* api = nullptr;
  hpcolls_comm* comm = nullptr;

  // In-place SUM of p[0:count] on `stream`: true when hpcolls' native path launched it, false
  // when it does not take the message (or there is no native path); throws HpcollsCallError.
  bool allreduce_sum(void* p, size_t count, int dtype, cudaStream_t stream) const {
    if (api == nullptr) return false;
    const int status = api->allreduce(comm, p, p, count, dtype, HPCOLLS_SUM, stream);
    if (status < 0) throw HpcollsCallError(status, api->last_error());
    return status == HPCOLLS_LAUNCHED;
  }

  // Whether this hpcolls has the device API (the C entry's version 3).
  bool has_device_comm() const { return api != nullptr && HPCOLLS_C_API_HAS(api, device_comm); }

  // The communicator's device struct, for a kernel that all-reduces itself (the fused column loop);
  // throws HpcollsCallError, also where an earlier kernel's operation timed out (its record is
  // read here: the fused loop's time-outs surface at its next panel or its check).
  hpcolls_device_comm_t device_comm() const {
    hpcolls_device_comm_t out{};
    if (!has_device_comm()) throw HpcollsCallError(HPCOLLS_ERROR, "solvers: hpcolls' C entry has no device_comm");
    const int status = api->device_comm(comm, &out);
    if (status < 0) throw HpcollsCallError(status, api->last_error());
    return out;
  }
};

}  // namespace solvers
