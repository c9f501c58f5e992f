// Finding the diagnostic module's launchers (diagnostics.h) from the default module.
#include <Python.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "hpcolls/diagnostics.h"

namespace py = pybind11;

namespace hpcolls {

const DiagnosticLaunchers* diagnostic_launchers(int mode) {
  const std::string what = "hpcolls: HPCOLLS_LL_MODE=" + std::to_string(mode) +
                           " (a diagnostic LL variant) needs the diagnostic build";
  py::object module;
  try {
    module = py::module_::import("hpcolls._native_diag");
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
    throw std::invalid_argument(what + ", and hpcolls._native_diag is not built (" + e.what() +
                                "): rebuild with HPCOLLS_DIAGNOSTICS=1 in the environment, e.g. "
                                "HPCOLLS_DIAGNOSTICS=1 pip install --no-build-isolation -e .");
  }
  py::object capsule = module.attr("LAUNCHERS");
  const auto* table = static_cast<const DiagnosticLaunchers*>(PyCapsule_GetPointer(capsule.ptr(), kDiagnosticsCapsule));
  if (table == nullptr) throw py::error_already_set();
  if (table->version != kDiagnosticsVersion || table->dev_comm_bytes != sizeof(DevComm) ||
      table->allreduce_args_bytes != sizeof(CollectiveArgs))
    throw std::invalid_argument(what + ", and hpcolls._native_diag was built from other sources than "
                                "hpcolls._native: rebuild both (HPCOLLS_DIAGNOSTICS=1)");
  return table;
}

}  // namespace hpcolls
