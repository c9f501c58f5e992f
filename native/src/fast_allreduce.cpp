// Communicator.Allreduce's common call, in C. The host time of one AllReduce is a budget
// (DESIGN.md: at most 0.7 µs above a bare kernel launch); the Python method it replaces (its
// frame and attribute reads, cupy's get_current_stream() and pybind11's six-argument dispatch)
// cost 1.3-2.2 µs above the launch (docs/PERFORMANCE.md). The communicator installs the
// builtin function made here as its instance's `Allreduce`. For cupy arrays on the
// communicator's GPU, a type and op the kernels carry, cupy's current stream or a `stream=` that
// is an integer or has an integer `ptr` (a cupy stream), and a message the native path takes, it
// launches with no Python frame at all. Every other call, and any call
// this code is unsure about, goes unchanged to `full` (the class's Allreduce, bound), which
// checks, explains and falls back.
#include "hpcolls/fast_allreduce.h"

#include <Python.h>
#include <pybind11/detail/exception_translation.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "hpcolls/native_comm.h"

namespace py = pybind11;

namespace hpcolls {
namespace {

constexpr int kMaxDtypes = 16;
constexpr int kParams = 4;  // sendbuf, recvbuf, op, stream: mpi4py's order plus hpcolls' stream

// The function's state (its `self`): garbage-collected, since `full` refers back to the
// communicator whose instance dictionary holds the function.
struct FastState {
  PyObject_HEAD
  NativeComm* comm;                 // lives as long as `owner`
  PyObject* owner;                  // the NativeComm's Python object
  PyObject* full;                   // Communicator.Allreduce bound to the communicator
  PyObject* ndarray;                // cupy.ndarray
  PyObject* in_place;               // MPI.IN_PLACE
  PyObject* ops[int(Op::kCount)];   // MPI.SUM, PROD, MIN, MAX, BAND, ..., by Op code
  PyObject* dtypes[kMaxDtypes];     // numpy dtype objects, matched by identity
  int codes[kMaxDtypes];
  int ndtypes;
  int device;
};

struct Names {
  PyObject *dtype, *data, *ptr, *device_id, *size, *c_contiguous;
  PyObject* params[kParams];
};
Names names;

// cupy's current stream for the current device. cupy exports get_current_stream_ptr() to Cython
// modules as a capsule in cupy_backends.cuda.stream's __pyx_capi__: one C call instead of
// building a Stream object (0.13 µs). Where that is missing, cupy.cuda.get_current_stream().ptr.
using StreamPtrFn = intptr_t (*)();
StreamPtrFn stream_fn = nullptr;
PyObject* stream_getter = nullptr;
std::string stream_source;

void resolve_stream_reader() {
  if (stream_fn != nullptr || stream_getter != nullptr) return;
  try {
    py::dict capi = py::module_::import("cupy_backends.cuda.stream").attr("__pyx_capi__");
    PyObject* cap = PyDict_GetItemString(capi.ptr(), "get_current_stream_ptr");
    const char* sig = cap != nullptr ? PyCapsule_GetName(cap) : nullptr;
    if (sig != nullptr && std::strcmp(sig, "intptr_t (void)") == 0) {
      stream_fn = reinterpret_cast<StreamPtrFn>(PyCapsule_GetPointer(cap, sig));
      stream_source = "cupy_backends.cuda.stream.get_current_stream_ptr (C)";
      return;
    }
    stream_source = std::string("cupy.cuda.get_current_stream (the C entry's signature is '") +
                    (sig != nullptr ? sig : "missing") + "')";
  } catch (py::error_already_set&) {
    stream_source = "cupy.cuda.get_current_stream (no cupy_backends C entry)";
  }
  stream_getter = py::object(py::module_::import("cupy").attr("cuda").attr("get_current_stream")).release().ptr();
}

bool current_stream(uintptr_t* out) {
  if (stream_fn != nullptr) {
    const intptr_t s = stream_fn();
    *out = uintptr_t(s);
    return PyErr_Occurred() == nullptr;
  }
  PyObject* stream = PyObject_CallNoArgs(stream_getter);
  if (stream == nullptr) return false;
  PyObject* ptr = PyObject_GetAttr(stream, names.ptr);
  Py_DECREF(stream);
  if (ptr == nullptr) return false;
  *out = uintptr_t(PyLong_AsVoidPtr(ptr));
  Py_DECREF(ptr);
  return PyErr_Occurred() == nullptr;
}

// An explicit `stream=` as the Python method reads it first (communicator._stream_ptr): an
// integer handle, or an object whose `ptr` is one (cupy's Stream and ExternalStream). False for
// anything else (torch streams, say), which the method then reads or refuses.
bool explicit_stream(PyObject* stream, uintptr_t* out) {
  if (PyLong_Check(stream)) {
    *out = uintptr_t(PyLong_AsUnsignedLongLong(stream));
    return PyErr_Occurred() == nullptr;
  }
  PyObject* ptr = PyObject_GetAttr(stream, names.ptr);
  if (ptr == nullptr) return false;
  const bool is_int = PyLong_Check(ptr);
  if (is_int) *out = uintptr_t(PyLong_AsUnsignedLongLong(ptr));
  Py_DECREF(ptr);
  return is_int && PyErr_Occurred() == nullptr;
}

// Integer attribute `name` of `obj`; false (with a Python error set) when it is not one.
bool long_attr(PyObject* obj, PyObject* name, long long* out) {
  PyObject* v = PyObject_GetAttr(obj, name);
  if (v == nullptr) return false;
  *out = PyLong_AsLongLong(v);
  Py_DECREF(v);
  return !(*out == -1 && PyErr_Occurred());
}

// What the launch needs of a cupy array; false when it is not a C-contiguous cupy array on
// `device` (or anything about it is unexpected: the full path then explains).
struct ArrayFacts {
  uintptr_t ptr;
  long long size;
  PyObject* dtype;  // identity only: the array holds the reference
};

bool read_array(const FastState* st, PyObject* obj, ArrayFacts* f) {
  if (Py_TYPE(obj) != reinterpret_cast<PyTypeObject*>(st->ndarray)) return false;
  PyObject* contiguous = PyObject_GetAttr(obj, names.c_contiguous);
  if (contiguous == nullptr) return false;
  Py_DECREF(contiguous);
  if (contiguous != Py_True) return false;
  PyObject* dtype = PyObject_GetAttr(obj, names.dtype);
  if (dtype == nullptr) return false;
  Py_DECREF(dtype);
  f->dtype = dtype;
  PyObject* mem = PyObject_GetAttr(obj, names.data);
  if (mem == nullptr) return false;
  long long device = -1, ptr = 0;
  const bool ok = long_attr(mem, names.device_id, &device) && long_attr(mem, names.ptr, &ptr);
  Py_DECREF(mem);
  f->ptr = uintptr_t(ptr);
  return ok && device == st->device && long_attr(obj, names.size, &f->size);
}

// Matches the call's arguments to (sendbuf, recvbuf, op, stream); false for anything else
// (too many, unknown or repeated keywords), which the full path then reports.
bool parse(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** a) {
  if (nargs > kParams) return false;
  for (Py_ssize_t i = 0; i < nargs; ++i) a[i] = args[i];
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    int idx = -1;
    for (int j = 0; j < kParams && idx < 0; ++j)
      if (key == names.params[j]) idx = j;  // keywords at call sites are interned
    for (int j = 0; j < kParams && idx < 0; ++j)
      if (PyUnicode_Compare(key, names.params[j]) == 0) idx = j;
    if (idx < 0 || a[idx] != nullptr) return false;
    a[idx] = args[nargs + k];
  }
  return a[0] != nullptr && a[1] != nullptr;
}

// 1: launched; 0: not this path's call (any Python error cleared); -1: the launch raised.
int try_launch(FastState* st, PyObject* const* a) {
  PyObject *sendbuf = a[0], *recvbuf = a[1], *op = a[2], *stream = a[3];
  if (st->comm == nullptr) return 0;
  int opc = op == nullptr ? int(Op::Sum) : -1;
  for (int i = 0; i < int(Op::kCount) && opc < 0; ++i)
    if (op == st->ops[i]) opc = i;
  if (opc < 0) return 0;
  ArrayFacts recv{}, send{};
  if (!read_array(st, recvbuf, &recv)) return PyErr_Clear(), 0;
  int code = -1;
  for (int i = 0; i < st->ndtypes && code < 0; ++i)
    if (recv.dtype == st->dtypes[i]) code = st->codes[i];
  if (code < 0 || !op_supported(DType(code), Op(opc))) return 0;
  if (sendbuf == st->in_place) {
    send = recv;
  } else {
    if (!read_array(st, sendbuf, &send)) return PyErr_Clear(), 0;
    if (send.dtype != recv.dtype || send.size != recv.size) return 0;
    const uintptr_t bytes = uintptr_t(recv.size) * dtype_size(DType(code));
    if (send.ptr != recv.ptr && send.ptr < recv.ptr + bytes && recv.ptr < send.ptr + bytes) return 0;
  }
  uintptr_t s = 0;
  const bool have_stream = stream == nullptr || stream == Py_None ? current_stream(&s) : explicit_stream(stream, &s);
  if (!have_stream) return PyErr_Clear(), 0;
  try {
    return st->comm->allreduce(send.ptr, recv.ptr, size_t(recv.size), DType(code), Op(opc), s) >= 0 ? 1 : 0;
  } catch (...) {
    py::detail::try_translate_exceptions();  // CommunicatorBroken, CollectiveTimeout, ... as bound
    return -1;
  }
}

PyObject* fast_allreduce(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  auto* st = reinterpret_cast<FastState*>(self);
  PyObject* a[kParams] = {nullptr, nullptr, nullptr, nullptr};
  if (parse(args, nargs, kwnames, a)) {
    const int r = try_launch(st, a);
    if (r > 0) Py_RETURN_NONE;
    if (r < 0) return nullptr;
  }
  if (st->full == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "hpcolls: this Allreduce belongs to a communicator that is gone");
    return nullptr;
  }
  return PyObject_Vectorcall(st->full, args, size_t(nargs), kwnames);
}

int state_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* st = reinterpret_cast<FastState*>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(st->owner);
  Py_VISIT(st->full);
  Py_VISIT(st->ndarray);
  Py_VISIT(st->in_place);
  for (PyObject* o : st->ops) Py_VISIT(o);
  for (int i = 0; i < st->ndtypes; ++i) Py_VISIT(st->dtypes[i]);
  return 0;
}

int state_clear(PyObject* self) {
  auto* st = reinterpret_cast<FastState*>(self);
  st->comm = nullptr;
  Py_CLEAR(st->owner);
  Py_CLEAR(st->full);
  Py_CLEAR(st->ndarray);
  Py_CLEAR(st->in_place);
  for (PyObject*& o : st->ops) Py_CLEAR(o);
  for (int i = 0; i < st->ndtypes; ++i) Py_CLEAR(st->dtypes[i]);
  st->ndtypes = 0;
  return 0;
}

void state_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  state_clear(self);
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyType_Slot state_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(state_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(state_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(state_clear)},
    {0, nullptr},
};

#ifndef Py_TPFLAGS_DISALLOW_INSTANTIATION
#define Py_TPFLAGS_DISALLOW_INSTANTIATION 0
#endif
PyType_Spec state_spec = {"hpcolls._native.FastAllreduceState", sizeof(FastState), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                          state_slots};
PyTypeObject* state_type = nullptr;

PyMethodDef fast_def = {
    "Allreduce", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_allreduce)),
    METH_FASTCALL | METH_KEYWORDS,
    "Allreduce(sendbuf, recvbuf, op=MPI.SUM, stream=None): mpi4py's Allreduce, hpcolls' paths.\n\n"
    "hpcolls.Communicator.Allreduce with its common call (cupy arrays; cupy's current stream, a\n"
    "cupy stream or an integer handle) in C;\n"
    "every other call is handed to that method unchanged."};

PyObject* intern(const char* s) { return PyUnicode_InternFromString(s); }

}  // namespace

void bind_fast_allreduce(py::module_& m) {
  names = {intern("dtype"), intern("data"), intern("ptr"), intern("device_id"), intern("size"),
           intern("_c_contiguous"), {intern("sendbuf"), intern("recvbuf"), intern("op"), intern("stream")}};
  state_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&state_spec));
  if (state_type == nullptr) throw py::error_already_set();

  m.def(
      "make_fast_allreduce",
      [](py::object native, py::object full, py::object ndarray, py::object in_place, py::sequence ops,
         py::sequence dtype_codes, int device) {
        if (py::len(ops) != size_t(Op::kCount)) throw std::invalid_argument("hpcolls: ops must list one MPI.Op per Op code (dtypes.mpi_ops_by_code)");
        if (py::len(dtype_codes) > size_t(kMaxDtypes)) throw std::invalid_argument("hpcolls: too many dtypes");
        resolve_stream_reader();
        NativeComm* comm = native.cast<NativeComm*>();
        py::object state = py::reinterpret_steal<py::object>(PyType_GenericAlloc(state_type, 0));
        if (!state) throw py::error_already_set();
        auto* st = reinterpret_cast<FastState*>(state.ptr());
        st->device = device;
        for (size_t i = 0; i < size_t(Op::kCount); ++i) st->ops[i] = py::object(ops[i]).release().ptr();
        for (py::handle pair : dtype_codes) {
          st->dtypes[st->ndtypes] = py::object(pair[py::int_(0)]).release().ptr();
          st->codes[st->ndtypes++] = pair[py::int_(1)].cast<int>();
        }
        st->ndarray = ndarray.release().ptr();
        st->in_place = in_place.release().ptr();
        st->full = full.release().ptr();
        st->owner = native.release().ptr();
        st->comm = comm;
        PyObject* fn = PyCFunction_NewEx(&fast_def, state.ptr(), nullptr);
        if (fn == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(fn);
      },
      py::arg("native"), py::arg("full"), py::arg("ndarray"), py::arg("in_place"), py::arg("ops"),
      py::arg("dtype_codes"), py::arg("device"),
      "The builtin function hpcolls.Communicator installs as its instance's Allreduce: the common "
      "call in C, everything else to `full` (fast_allreduce.cpp).");
  m.def(
      "cupy_current_stream",
      [] {
        resolve_stream_reader();
        uintptr_t s = 0;
        if (!current_stream(&s)) throw py::error_already_set();
        return s;
      },
      "cupy's current stream as the fast Allreduce reads it (compare cupy.cuda.get_current_stream().ptr)");
  m.def(
      "cupy_stream_reader",
      [] {
        resolve_stream_reader();
        return stream_source;
      },
      "How the fast Allreduce reads cupy's current stream");
}

}  // namespace hpcolls
