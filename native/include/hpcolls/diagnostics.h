// What the diagnostic module (hpcolls._native_diag, native/diagnostics/, built only with
// HPCOLLS_DIAGNOSTICS=1) lends the default one: the AllReduce kernels built for the LL modes 1..3
// (ll_line.cuh). It exports this table in a PyCapsule named kDiagnosticsCapsule; the default
// module looks it up when a communicator is set to such a mode (diagnostics_link.cpp) and refuses
// the mode, saying how to build the module, when it is not there. The two modules are built from
// one checkout, and the table records the layouts both sides must agree on.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "hpcolls/collective_args.h"
#include "hpcolls/types.h"

namespace hpcolls {

inline constexpr const char kDiagnosticsCapsule[] = "hpcolls._native_diag.launchers";
constexpr int kDiagnosticsVersion = 1;  // bumped with any change of this table's meaning

using AllreduceLauncher = cudaError_t (*)(const DevComm&, DType, Op, const CollectiveArgs&);

struct DiagnosticLaunchers {
  int version;
  size_t dev_comm_bytes;       // sizeof(DevComm) where the table was built
  size_t allreduce_args_bytes; // sizeof(CollectiveArgs) there
  AllreduceLauncher oneshot;   // the general one-shot kernel, for DevComm::ll_mode 1..3
  AllreduceLauncher twoshot;   // two-shot, likewise
};

// The diagnostic module's table for LL mode `mode`; throws std::invalid_argument, saying how to
// build it, when the module is not built or was built from other sources (diagnostics_link.cpp).
const DiagnosticLaunchers* diagnostic_launchers(int mode);

}  // namespace hpcolls
