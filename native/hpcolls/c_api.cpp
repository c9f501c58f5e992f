// hpcolls' C entry (hpcolls/c_api.h): the function table behind capsule hpcolls._native.c_api_v1,
// and the per-communicator handle capsule NativeComm.capsule() returns. Every entry catches what
// NativeComm throws and turns it into a status and a message: no C++ exception crosses into the
// calling module, which may be built with another compiler.
#include "hpcolls/c_api_module.h"

#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "hpcolls/c_api.h"
#include "hpcolls/errors.h"
#include "hpcolls/native_comm.h"

namespace py = pybind11;

namespace hpcolls {
namespace {

thread_local std::string last_error_text;

int fail(int status, const char* what) {
  last_error_text = what;
  return status;
}

NativeComm* native(hpcolls_comm* c) { return reinterpret_cast<NativeComm*>(c); }
const NativeComm* native(const hpcolls_comm* c) { return reinterpret_cast<const NativeComm*>(c); }

// Runs call() (NativeComm's result: >= 0 launched, -1 not taken) for collective `what`, with the
// checks every entry makes first; every exception becomes a status and last_error()'s message.
template <typename Call>
int guarded(const char* what, hpcolls_comm* comm, bool reduction, int dtype, int op, Call call) {
  last_error_text.clear();
  const std::string name = std::string("hpcolls: ") + what + " through the C entry";
  if (comm == nullptr) return fail(HPCOLLS_ERROR, (name + ": no communicator").c_str());
  if (reduction && (dtype < 0 || dtype >= int(DType::kCount) || op < 0 || op >= int(Op::kCount)))
    return fail(HPCOLLS_ERROR, (name + ": dtype " + std::to_string(dtype) + " or op " + std::to_string(op) +
                                " is not one of hpcolls_dtype / hpcolls_op")
                                   .c_str());
  try {
    return call() >= 0 ? HPCOLLS_LAUNCHED : HPCOLLS_NOT_TAKEN;
  } catch (const CollectiveTimeout& e) {
    return fail(HPCOLLS_TIMEOUT, e.what());
  } catch (const CommunicatorBroken& e) {
    return fail(HPCOLLS_BROKEN, e.what());
  } catch (const CudaError& e) {
    return fail(HPCOLLS_CUDA_ERROR, e.what());
  } catch (const std::exception& e) {
    return fail(HPCOLLS_ERROR, e.what());
  } catch (...) {
    return fail(HPCOLLS_ERROR, (name + " failed (unknown exception)").c_str());
  }
}

int c_allreduce(hpcolls_comm* comm, const void* send, void* recv, size_t count, int dtype, int op, void* stream) {
  return guarded("allreduce", comm, true, dtype, op, [&] {
    return native(comm)->allreduce(uintptr_t(send), uintptr_t(recv), count, DType(dtype), Op(op), uintptr_t(stream));
  });
}

int c_allgather(hpcolls_comm* comm, const void* send, void* recv, size_t bytes, void* stream) {
  return guarded("allgather", comm, false, 0, 0, [&] {
    return native(comm)->allgather(uintptr_t(send), uintptr_t(recv), bytes, 0, uintptr_t(stream));
  });
}

int c_bcast(hpcolls_comm* comm, void* buf, size_t bytes, int root, void* stream) {
  return guarded("bcast", comm, false, 0, 0,
                 [&] { return native(comm)->bcast(uintptr_t(buf), bytes, root, uintptr_t(stream)); });
}

int c_reduce(hpcolls_comm* comm, const void* send, void* recv, size_t count, int dtype, int op, int root,
             void* stream) {
  return guarded("reduce", comm, true, dtype, op, [&] {
    return native(comm)->reduce(uintptr_t(send), uintptr_t(recv), count, DType(dtype), Op(op), root,
                                uintptr_t(stream));
  });
}

int c_reduce_scatter(hpcolls_comm* comm, const void* send, void* recv, const size_t* counts, int dtype, int op,
                     void* stream) {
  return guarded("reduce_scatter", comm, true, dtype, op, [&] {
    if (counts == nullptr) throw std::invalid_argument("hpcolls: reduce_scatter through the C entry: no counts");
    const std::vector<size_t> all(counts, counts + native(comm)->nranks());
    return native(comm)->reduce_scatter(uintptr_t(send), uintptr_t(recv), all, DType(dtype), Op(op),
                                        uintptr_t(stream));
  });
}

int c_device_comm(hpcolls_comm* comm, hpcolls_device_comm_t* out) {
  return guarded("device_comm", comm, false, 0, 0, [&] {
    if (out == nullptr) throw std::invalid_argument("hpcolls: device_comm through the C entry: no struct to fill");
    *out = native(comm)->device_comm();
    return 0;
  });
}

int c_rank(const hpcolls_comm* comm) { return comm ? native(comm)->rank() : -1; }
int c_nranks(const hpcolls_comm* comm) { return comm ? native(comm)->nranks() : -1; }
int c_device(const hpcolls_comm* comm) { return comm ? native(comm)->device() : -1; }
const char* c_last_error() { return last_error_text.c_str(); }

const hpcolls_c_api kApi = {
    HPCOLLS_C_API_VERSION, uint32_t(sizeof(hpcolls_c_api)), &c_allreduce, &c_rank, &c_nranks, &c_device,
    &c_last_error, &c_allgather, &c_bcast, &c_reduce, &c_reduce_scatter, &c_device_comm,
};

// The handle capsule holds a reference to the NativeComm's Python object (its context), so the
// C++ object outlives every handle; a communicator freed meanwhile answers HPCOLLS_BROKEN.
void drop_owner(PyObject* capsule) { Py_XDECREF(static_cast<PyObject*>(PyCapsule_GetContext(capsule))); }

}  // namespace

void bind_c_api(py::module_& m) {
  m.attr("C_API_VERSION") = HPCOLLS_C_API_VERSION;
  m.attr("c_api_v1") = py::capsule(static_cast<const void*>(&kApi), HPCOLLS_C_API_CAPSULE);
}

py::capsule comm_capsule(py::handle native_comm) {
  NativeComm* comm = native_comm.cast<NativeComm*>();
  PyObject* cap = PyCapsule_New(comm, HPCOLLS_COMM_CAPSULE, &drop_owner);
  if (cap == nullptr) throw py::error_already_set();
  if (PyCapsule_SetContext(cap, native_comm.inc_ref().ptr()) != 0) {
    native_comm.dec_ref();
    Py_DECREF(cap);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

}  // namespace hpcolls
