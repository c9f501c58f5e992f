// The common call of each collective the native kernels carry, in C: Allreduce, Bcast, Reduce,
// Allgather, Reduce_scatter_block, Reduce_scatter. The host time of one call is a budget
// (docs/ARCHITECTURE.md#targets-and-floors: at most 0.7 µs above a bare kernel launch); the
// Python method a call otherwise takes (its frame and attribute reads, the buffers' parse,
// cupy's get_current_stream() and pybind11's dispatch) costs 1.3-2.2 µs above the launch
// (docs/PERFORMANCE.md). The communicator
// installs a builtin function made here as its instance's method of that name, one per
// collective, all from one table of entries (kEntries): each names mpi4py's parameters and how
// its common call launches. For C-contiguous cupy arrays on the communicator's GPU, a type and
// op the kernels carry (any type, as bytes, for Bcast and Allgather), cupy's current stream or a
// `stream=` that is an integer or has an integer `ptr` (a cupy stream), and a message the native
// path takes whole, it launches with no Python frame at all. Every other call, and any call this
// code is unsure about, goes unchanged to `full` (the class's method, bound), which checks,
// explains and routes (hpcolls/routes/native.py).
#include "hpcolls/fast_entry.h"

#include <Python.h>
#include <pybind11/detail/exception_translation.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hpcolls/native_comm.h"

namespace py = pybind11;

namespace hpcolls {
namespace {

constexpr int kMaxDtypes = 16;
constexpr int kMaxParams = 5;  // Reduce_scatter: sendbuf, recvbuf, recvcounts, op, stream

struct FastState;
// 1: launched; 0: not this path's call (any Python error cleared); -1: the launch raised.
using Launch = int (*)(FastState* st, PyObject* const* a);

// One collective's entry: mpi4py's parameters in order, then hpcolls' `stream` (keyword-only, as
// the Python method has it).
struct Entry {
  const char* name;
  const char* params[kMaxParams];
  int nparams;
  int required;  // the leading parameters without a default
  Launch launch;
  const char* doc;
};

// The function's state (its `self`): garbage-collected, since `full` refers back to the
// communicator whose instance dictionary holds the function.
struct FastState {
  PyObject_HEAD
  const Entry* entry;
  PyObject* const* param_names;     // the entry's parameters, interned
  NativeComm* comm;                 // lives as long as `owner`
  PyObject* owner;                  // the NativeComm's Python object
  PyObject* full;                   // the communicator's method of the entry's name, bound
  PyObject* ndarray;                // cupy.ndarray
  PyObject* in_place;               // MPI.IN_PLACE
  PyObject* ops[int(Op::kCount)];   // MPI.SUM, PROD, MIN, MAX, BAND, ..., by Op code
  PyObject* dtypes[kMaxDtypes];     // numpy dtype objects, matched by identity
  int codes[kMaxDtypes];
  int ndtypes;
  int device;
};

struct Names {
  PyObject *dtype, *data, *ptr, *device_id, *size, *nbytes, *c_contiguous;
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

// The call's stream as the Python method reads it first (hpcolls/streams.py): none, cupy's
// current one; an integer handle; an object whose `ptr` is one (cupy's Stream and ExternalStream).
// False for anything else (torch streams, say), which the method then reads or refuses.
bool read_stream(PyObject* stream, uintptr_t* out) {
  if (stream == nullptr || stream == Py_None) return current_stream(out);
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
// `device` (or anything about it is unexpected: the full path then explains). A typed array
// has its element count and dtype read (its code, -1 where the kernels have none); a byte array
// (Bcast, Allgather: any type) its bytes.
struct ArrayFacts {
  uintptr_t ptr;
  long long size;   // elements, or bytes
  PyObject* dtype;  // identity only: the array holds the reference
  int code;
};

bool read_array(const FastState* st, PyObject* obj, bool bytes, ArrayFacts* f) {
  if (obj == nullptr || Py_TYPE(obj) != reinterpret_cast<PyTypeObject*>(st->ndarray)) return false;
  PyObject* contiguous = PyObject_GetAttr(obj, names.c_contiguous);
  if (contiguous == nullptr) return false;
  Py_DECREF(contiguous);
  if (contiguous != Py_True) return false;
  f->dtype = nullptr;
  f->code = int(DType::U8);
  if (!bytes) {
    PyObject* dtype = PyObject_GetAttr(obj, names.dtype);
    if (dtype == nullptr) return false;
    Py_DECREF(dtype);
    f->dtype = dtype;
    f->code = -1;
    for (int i = 0; i < st->ndtypes && f->code < 0; ++i)
      if (dtype == st->dtypes[i]) f->code = st->codes[i];
  }
  PyObject* mem = PyObject_GetAttr(obj, names.data);
  if (mem == nullptr) return false;
  long long device = -1, ptr = 0;
  const bool ok = long_attr(mem, names.device_id, &device) && long_attr(mem, names.ptr, &ptr);
  Py_DECREF(mem);
  f->ptr = uintptr_t(ptr);
  return ok && device == st->device && long_attr(obj, bytes ? names.nbytes : names.size, &f->size);
}

// The op's code (none given: MPI.SUM), matched by identity; -1 for any other object.
int read_op(const FastState* st, PyObject* op) {
  if (op == nullptr) return int(Op::Sum);
  for (int i = 0; i < int(Op::kCount); ++i)
    if (op == st->ops[i]) return i;
  return -1;
}

// A root given as an integer (none: 0) that names a rank; -1 otherwise (the full path explains).
int read_root(const FastState* st, PyObject* root) {
  if (root == nullptr) return 0;
  if (!PyLong_Check(root)) return -1;
  const long r = PyLong_AsLong(root);
  if (r == -1 && PyErr_Occurred()) return PyErr_Clear(), -1;
  return r >= 0 && r < st->comm->nranks() ? int(r) : -1;
}

bool overlap(uintptr_t a, size_t a_bytes, uintptr_t b, size_t b_bytes) { return a < b + b_bytes && b < a + a_bytes; }

// A reduction's send buffer beside its receive buffer `recv`: the same element type, `count`
// elements, not overlapping recv (the same array is in place, as mpi4py reads it). MPI.IN_PLACE:
// recv itself. False for anything else.
bool read_send(const FastState* st, PyObject* sendbuf, const ArrayFacts& recv, long long count, ArrayFacts* send) {
  if (sendbuf == st->in_place) {
    *send = recv;
    return true;
  }
  if (!read_array(st, sendbuf, false, send) || send->dtype != recv.dtype || send->size != count) return false;
  const size_t esize = dtype_size(DType(recv.code));
  return send->ptr == recv.ptr || !overlap(send->ptr, size_t(send->size) * esize, recv.ptr, size_t(recv.size) * esize);
}

bool carried(int code, int opc) { return code >= 0 && opc >= 0 && op_supported(DType(code), Op(opc)); }

// Runs a native call: 1 when it launched, 0 when it declined (nothing launched), -1 with the
// Python exception set when it raised (CommunicatorBroken, CollectiveTimeout, ... as bound).
template <typename Call>
int guarded(Call call) {
  try {
    return call() >= 0 ? 1 : 0;
  } catch (...) {
    py::detail::try_translate_exceptions();
    return -1;
  }
}

// The entries' common call, one function each; `a` holds the entry's parameters in order
// (nullptr: not given).

int allreduce(FastState* st, PyObject* const* a) {  // sendbuf, recvbuf, op, stream
  ArrayFacts recv{}, send{};
  const int opc = read_op(st, a[2]);
  uintptr_t s = 0;
  if (!read_array(st, a[1], false, &recv) || !carried(recv.code, opc) || !read_send(st, a[0], recv, recv.size, &send) ||
      !read_stream(a[3], &s))
    return 0;
  return guarded([&] { return st->comm->allreduce(send.ptr, recv.ptr, size_t(recv.size), DType(recv.code), Op(opc), s); });
}

int bcast(FastState* st, PyObject* const* a) {  // buf, root, stream
  ArrayFacts buf{};
  const int root = read_root(st, a[1]);
  uintptr_t s = 0;
  if (root < 0 || !read_array(st, a[0], true, &buf) || !read_stream(a[2], &s)) return 0;
  return guarded([&] { return st->comm->bcast(buf.ptr, size_t(buf.size), root, s); });
}

int reduce(FastState* st, PyObject* const* a) {  // sendbuf, recvbuf, op, root, stream
  ArrayFacts recv{}, send{};
  const int opc = read_op(st, a[2]), root = read_root(st, a[3]);
  uintptr_t s = 0;
  if (root < 0) return 0;
  if (root == st->comm->rank()) {
    if (!read_array(st, a[1], false, &recv) || !read_send(st, a[0], recv, recv.size, &send)) return 0;
  } else {  // the receive buffer is not read off the root
    if (a[0] == st->in_place || !read_array(st, a[0], false, &send)) return 0;
    recv = send;
  }
  if (!carried(send.code, opc) || !read_stream(a[4], &s)) return 0;
  return guarded(
      [&] { return st->comm->reduce(send.ptr, recv.ptr, size_t(send.size), DType(send.code), Op(opc), root, s); });
}

int allgather(FastState* st, PyObject* const* a) {  // sendbuf, recvbuf, stream
  ArrayFacts recv{}, send{};
  const long long n = st->comm->nranks();
  uintptr_t s = 0;
  if (!read_array(st, a[1], true, &recv) || recv.size % n != 0) return 0;
  const long long bytes = recv.size / n;
  if (a[0] == st->in_place) {
    send.ptr = recv.ptr + uintptr_t(st->comm->rank() * bytes);
  } else if (!read_array(st, a[0], true, &send) || send.size != bytes) {
    return 0;
  }
  if (!read_stream(a[2], &s)) return 0;
  return guarded([&] { return st->comm->allgather(send.ptr, recv.ptr, size_t(bytes), 0, s); });
}

int reduce_scatter_block(FastState* st, PyObject* const* a) {  // sendbuf, recvbuf, op, stream
  ArrayFacts recv{}, send{};
  const int opc = read_op(st, a[2]);
  const long long n = st->comm->nranks();
  uintptr_t s = 0;
  if (!read_array(st, a[1], false, &recv) || !carried(recv.code, opc)) return 0;
  long long count = recv.size;
  if (a[0] == st->in_place) {
    if (recv.size % n != 0) return 0;
    count = recv.size / n;
  }
  if (!read_send(st, a[0], recv, n * count, &send) || (a[0] != st->in_place && send.ptr == recv.ptr) ||
      !read_stream(a[3], &s))
    return 0;
  return guarded([&] {
    return st->comm->reduce_scatter(send.ptr, recv.ptr, std::vector<size_t>(size_t(n), size_t(count)),
                                    DType(recv.code), Op(opc), s);
  });
}

// recvcounts: a list or tuple of one non-negative integer per rank; false for anything else.
bool read_counts(const FastState* st, PyObject* obj, std::vector<size_t>* counts, long long* total) {
  if (obj == nullptr || !(PyList_Check(obj) || PyTuple_Check(obj))) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
  if (n != st->comm->nranks()) return false;
  PyObject** items = PySequence_Fast_ITEMS(obj);
  *total = 0;
  counts->resize(size_t(n));
  for (Py_ssize_t q = 0; q < n; ++q) {
    if (!PyLong_Check(items[q])) return false;
    const long long c = PyLong_AsLongLong(items[q]);
    if (c < 0) return PyErr_Clear(), false;
    (*counts)[size_t(q)] = size_t(c);
    *total += c;
  }
  return true;
}

int reduce_scatter(FastState* st, PyObject* const* a) {  // sendbuf, recvbuf, recvcounts, op, stream
  ArrayFacts recv{}, send{};
  std::vector<size_t> counts;
  long long total = 0;
  const int opc = read_op(st, a[3]);
  uintptr_t s = 0;
  if (!read_counts(st, a[2], &counts, &total) || !read_array(st, a[1], false, &recv) || !carried(recv.code, opc))
    return 0;
  const bool in_place = a[0] == st->in_place;
  if (recv.size != (in_place ? total : (long long)counts[size_t(st->comm->rank())])) return 0;
  if (!read_send(st, a[0], recv, total, &send) || (!in_place && send.ptr == recv.ptr) || !read_stream(a[4], &s))
    return 0;
  return guarded([&] { return st->comm->reduce_scatter(send.ptr, recv.ptr, counts, DType(recv.code), Op(opc), s); });
}

constexpr Entry kEntries[] = {
    {"Allreduce", {"sendbuf", "recvbuf", "op", "stream"}, 4, 2, allreduce,
     "Allreduce(sendbuf, recvbuf, op=MPI.SUM, stream=None): mpi4py's Allreduce, hpcolls' routes."},
    {"Bcast", {"buf", "root", "stream"}, 3, 1, bcast, "Bcast(buf, root=0, stream=None): mpi4py's Bcast, hpcolls' routes."},
    {"Reduce", {"sendbuf", "recvbuf", "op", "root", "stream"}, 5, 2, reduce,
     "Reduce(sendbuf, recvbuf, op=MPI.SUM, root=0, stream=None): mpi4py's Reduce, hpcolls' routes."},
    {"Allgather", {"sendbuf", "recvbuf", "stream"}, 3, 2, allgather,
     "Allgather(sendbuf, recvbuf, stream=None): mpi4py's Allgather, hpcolls' routes."},
    {"Reduce_scatter_block", {"sendbuf", "recvbuf", "op", "stream"}, 4, 2, reduce_scatter_block,
     "Reduce_scatter_block(sendbuf, recvbuf, op=MPI.SUM, stream=None): mpi4py's Reduce_scatter_block, hpcolls' "
     "routes."},
    {"Reduce_scatter", {"sendbuf", "recvbuf", "recvcounts", "op", "stream"}, 5, 2, reduce_scatter,
     "Reduce_scatter(sendbuf, recvbuf, recvcounts=None, op=MPI.SUM, stream=None): mpi4py's Reduce_scatter, "
     "hpcolls' routes."},
};
constexpr int kNumEntries = int(sizeof(kEntries) / sizeof(kEntries[0]));
PyObject* param_names[kNumEntries][kMaxParams];
PyMethodDef method_defs[kNumEntries];

// Matches the call's arguments to the entry's parameters; false for anything else (too many
// positional ones, `stream` among them; unknown or repeated keywords; a required one missing),
// which the full path then reports as mpi4py's method would.
bool parse(const FastState* st, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** a) {
  const Entry& e = *st->entry;
  if (nargs >= e.nparams) return false;  // the last parameter, stream, is keyword-only
  for (Py_ssize_t i = 0; i < nargs; ++i) a[i] = args[i];
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    int idx = -1;
    for (int j = 0; j < e.nparams && idx < 0; ++j)
      if (key == st->param_names[j]) idx = j;  // keywords at call sites are interned
    for (int j = 0; j < e.nparams && idx < 0; ++j)
      if (PyUnicode_Compare(key, st->param_names[j]) == 0) idx = j;
    if (idx < 0 || a[idx] != nullptr) return false;
    a[idx] = args[nargs + k];
  }
  for (int j = 0; j < e.required; ++j)
    if (a[j] == nullptr) return false;
  return true;
}

PyObject* fast_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  auto* st = reinterpret_cast<FastState*>(self);
  PyObject* a[kMaxParams] = {};
  if (st->comm != nullptr && parse(st, args, nargs, kwnames, a)) {
    const int r = st->entry->launch(st, a);
    if (r > 0) Py_RETURN_NONE;
    if (r < 0) return nullptr;
    PyErr_Clear();  // a reading that failed on the way is the full path's to explain
  }
  if (st->full == nullptr) {
    PyErr_Format(PyExc_RuntimeError, "hpcolls: this %s belongs to a communicator that is gone", st->entry->name);
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
PyType_Spec state_spec = {"hpcolls._native.FastEntryState", sizeof(FastState), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                          state_slots};
PyTypeObject* state_type = nullptr;

PyObject* intern(const char* s) { return PyUnicode_InternFromString(s); }

}  // namespace

void bind_fast_entries(py::module_& m) {
  names = {intern("dtype"), intern("data"), intern("ptr"), intern("device_id"), intern("size"), intern("nbytes"),
           intern("_c_contiguous")};
  py::dict entries;
  for (int i = 0; i < kNumEntries; ++i) {
    const Entry& e = kEntries[i];
    py::list params;
    for (int j = 0; j < e.nparams; ++j) {
      param_names[i][j] = intern(e.params[j]);
      params.append(e.params[j]);
    }
    method_defs[i] = {e.name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_entry)),
                      METH_FASTCALL | METH_KEYWORDS, e.doc};
    entries[e.name] = py::make_tuple(py::tuple(params), e.required);
  }
  state_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&state_spec));
  if (state_type == nullptr) throw py::error_already_set();
  // The methods make_fast_entry makes: {name: ((parameters in order), how many are required)}.
  m.attr("FAST_ENTRIES") = entries;

  m.def(
      "make_fast_entry",
      [](const std::string& name, py::object native, py::object full, py::object ndarray, py::object in_place,
         py::sequence ops, py::sequence dtype_codes, int device) {
        int which = -1;
        for (int i = 0; i < kNumEntries && which < 0; ++i)
          if (name == kEntries[i].name) which = i;
        if (which < 0) throw std::invalid_argument("hpcolls: no native entry for " + name + " (FAST_ENTRIES)");
        if (py::len(ops) != size_t(Op::kCount)) throw std::invalid_argument("hpcolls: ops must list one MPI.Op per Op code (dtypes.mpi_ops_by_code)");
        if (py::len(dtype_codes) > size_t(kMaxDtypes)) throw std::invalid_argument("hpcolls: too many dtypes");
        resolve_stream_reader();
        NativeComm* comm = native.cast<NativeComm*>();
        py::object state = py::reinterpret_steal<py::object>(PyType_GenericAlloc(state_type, 0));
        if (!state) throw py::error_already_set();
        auto* st = reinterpret_cast<FastState*>(state.ptr());
        st->entry = &kEntries[which];
        st->param_names = param_names[which];
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
        PyObject* fn = PyCFunction_NewEx(&method_defs[which], state.ptr(), nullptr);
        if (fn == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(fn);
      },
      py::arg("name"), py::arg("native"), py::arg("full"), py::arg("ndarray"), py::arg("in_place"), py::arg("ops"),
      py::arg("dtype_codes"), py::arg("device"),
      "The builtin function hpcolls.Communicator installs as its instance's method `name` (one of "
      "FAST_ENTRIES): the common call in C, everything else to `full` (fast_entry.cpp).");
  m.def(
      "cupy_current_stream",
      [] {
        resolve_stream_reader();
        uintptr_t s = 0;
        if (!current_stream(&s)) throw py::error_already_set();
        return s;
      },
      "cupy's current stream as the native entries read it (compare cupy.cuda.get_current_stream().ptr)");
  m.def(
      "cupy_stream_reader",
      [] {
        resolve_stream_reader();
        return stream_source;
      },
      "How the native entries read cupy's current stream");
}

}  // namespace hpcolls
