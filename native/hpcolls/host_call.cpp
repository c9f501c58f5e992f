// Python callables run in a CUDA stream's order, on the runtime's host-function thread
// (cudaLaunchHostFunc): how a collective whose step between nodes is MPI on the host can sit inside
// a CUDA graph, the host step becoming a host node that every replay runs.
//
// The callable stays referenced until release_host_call(), not just until it has run once (as a
// stream callback's would): a captured graph runs it again on every replay. It is called with the
// GIL taken, so the thread that waits for the stream must not hold the GIL while it waits (cupy's
// and this module's synchronizations release it). It must not raise: an exception is reported as
// unraisable and the stream goes on; the callable records its own failures for the caller.
#include "hpcolls/host_call.h"

#include <cstdint>

#include <cuda_runtime.h>

#include "hpcolls/errors.h"

namespace py = pybind11;

namespace hpcolls {
namespace {

struct HostCall {
  PyObject* callable;  // a strong reference
};

void CUDART_CB run_host_call(void* data) {
  if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing left to run it
  const PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* callable = static_cast<HostCall*>(data)->callable;
  PyObject* result = PyObject_CallNoArgs(callable);
  if (result == nullptr) {
    PyErr_WriteUnraisable(callable);
  } else {
    Py_DECREF(result);
  }
  PyGILState_Release(gil);
}

}  // namespace

void bind_host_calls(py::module_& m) {
  m.def(
      "launch_host_call",
      [](uintptr_t stream, py::object callable) {
        auto* call = new HostCall{callable.release().ptr()};
        const cudaError_t e =
            cudaLaunchHostFunc(reinterpret_cast<cudaStream_t>(stream), run_host_call, call);
        if (e != cudaSuccess) {
          Py_DECREF(call->callable);
          delete call;
          cuda_check(e, "cudaLaunchHostFunc");
        }
        return reinterpret_cast<uintptr_t>(call);
      },
      "Enqueues callable() on the stream (captured: a host node of the graph); returns a handle that "
      "keeps it alive until release_host_call(handle), once nothing will run it again");
  m.def(
      "release_host_call",
      [](uintptr_t handle) {
        auto* call = reinterpret_cast<HostCall*>(handle);
        Py_DECREF(call->callable);
        delete call;
      },
      "Drops a launch_host_call() handle's callable: no stream or graph may run it afterwards");
}

}  // namespace hpcolls
