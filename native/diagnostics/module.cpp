// hpcolls._native_diag: what only diagnosis and benchmarks use, kept out of the default module
// (built with HPCOLLS_DIAGNOSTICS=1): the AllReduce kernels of the LL modes 1..3, empty-kernel
// launch probes (the benchmark's baselines) and raw reads / writes of scratch memory.
#include <cuda_runtime.h>
#include <pybind11/pybind11.h>

#include <cstdint>

#include "hpcolls/errors.h"
#include "launch_probe.h"
#include "ll_modes.h"

namespace py = pybind11;
using namespace hpcolls;

namespace {
PyObject* no_device_error = nullptr;
PyObject* cuda_error = nullptr;

void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const NoDeviceError& e) {
    PyErr_SetString(no_device_error, e.what());
  } catch (const CudaError& e) {
    PyErr_SetString(cuda_error, e.what());
  }
}
}  // namespace

PYBIND11_MODULE(_native_diag, m) {
  m.doc() = "hpcolls diagnostic variants (HPCOLLS_DIAGNOSTICS=1 builds): LL modes 1-3, launch probes, peek/poke";
  // Errors raise hpcolls._native's exception classes, which hpcolls.errors re-exports (held for
  // the life of the process, as the module is).
  py::module_ native = py::module_::import("hpcolls._native");
  no_device_error = py::object(native.attr("NoDeviceError")).release().ptr();
  cuda_error = py::object(native.attr("CudaError")).release().ptr();
  py::register_exception_translator(&translate);

  m.attr("LAUNCHERS") = py::capsule(diagnostics::ll_mode_launchers(), kDiagnosticsCapsule);

  m.def("launch_noop", &launch_noop, py::arg("stream"),
        "one empty kernel on `stream`: the bare-launch baseline of the host-overhead benchmark");
  m.def("launch_noop_with_allreduce_args", &launch_noop_with_allreduce_args, py::arg("stream"),
        py::arg("launch_kernel_ex"),
        "one empty kernel with the AllReduce kernels' parameters (their size) on `stream`, launched by "
        "<<<>>> or, with launch_kernel_ex, by cudaLaunchKernelEx as the AllReduce kernels are");
  m.def("launch_noop_dependent", &launch_noop_dependent, py::arg("stream"),
        "one empty kernel on `stream` launched with dependent launch, waiting for the kernel before it "
        "and letting the next start early as the AllReduce kernels do; False (nothing launched) on a "
        "device without dependent launch (compute capability < 9.0)");

  // 8 bytes at any device address (a scratch address is NativeComm.scratch_address(rank) + offset).
  m.def("peek", [](uintptr_t address) {
    uint64_t v = 0;
    cuda_check(cudaMemcpy(&v, reinterpret_cast<const void*>(address), 8, cudaMemcpyDefault), "peek");
    return v;
  }, py::arg("address"));
  m.def("poke", [](uintptr_t address, uint64_t v) {
    cuda_check(cudaMemcpy(reinterpret_cast<void*>(address), &v, 8, cudaMemcpyDefault), "poke");
  }, py::arg("address"), py::arg("value"));
}
