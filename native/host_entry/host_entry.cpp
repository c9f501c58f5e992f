// hpcolls._host_entry: the buffer methods of hpcolls.Communicator as method descriptors in C, so
// that a call on host buffers reaches mpi4py's method with no Python frame in between.
//
// hpcolls/routes/host.py makes one HostEntry per buffer method of hpcolls.methods' table and
// puts it on the class in place of the Python method (`full`). A call whose buffer arguments are
// all of the kinds the entry knows to be host memory (exact types, listed by
// hpcolls.buffers.HOST_TYPES, alone or first in a list/tuple spec; None, MPI.IN_PLACE and
// MPI.BOTTOM), whose keywords are all mpi4py's parameters (so no `stream=`), made while the log
// is quieter than INFO and, where the entry has a gate, while that attribute of the communicator
// is True (the communicator sets it once its settings ask for no validation), goes to mpi4py's
// method (`base`) with the very arguments and keywords it was made with: what the Python
// method would do with it (hpcolls/routes/host.py's `call`). Every other call goes to `full`,
// unchanged. Nothing here can tell host from device memory by asking CUDA: what it does not know
// is the full path's to decide.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstddef>

#if PY_VERSION_HEX < 0x030C0000  // the member types' names before 3.12
#include <structmember.h>
#define Py_T_PYSSIZET T_PYSSIZET
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_READONLY READONLY
#endif

namespace {

constexpr Py_ssize_t kMaxParams = 16;  // mpi4py's buffer methods have at most 7 parameters after self

struct HostEntry {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* dict;        // __name__, __doc__, __signature__, ... (set by hpcolls/routes/host.py)
  PyObject* base;        // mpi4py's method, called as base(self, *args, **kwargs)
  PyObject* full;        // hpcolls' Python method, for every other call
  PyObject* parameters;  // mpi4py's parameter names after self (a tuple of interned str)
  PyObject* host_types;  // a tuple of types whose instances are host memory (exact types)
  PyObject* no_buffers;  // a tuple of objects that are no memory at all: None, MPI.IN_PLACE, MPI.BOTTOM
  PyObject* log_state;   // the dict holding the log level (hpcolls.log's namespace)
  PyObject* gate;        // the communicator's attribute that must be True, or None: no gate
  long log_level_full;   // from this log level on, every call takes `full` (which logs)
  Py_ssize_t nparams;
  bool is_buffer[kMaxParams];
};

PyObject* level_key = nullptr;  // "level", interned

bool in_tuple(PyObject* tuple, PyObject* item) {
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (PyTuple_GET_ITEM(tuple, i) == item) return true;
  return false;
}

// An object that holds host memory or no memory, known by its exact type or identity alone.
bool plain_host(const HostEntry* e, PyObject* obj) {
  return in_tuple(e->no_buffers, obj) || in_tuple(e->host_types, reinterpret_cast<PyObject*>(Py_TYPE(obj)));
}

// A buffer argument as hpcolls.buffers.array_of reads it: the object, or the first item of a
// list/tuple spec (an empty one is itself). Subclasses of list and tuple index their own way:
// left to the full path.
bool host_spec(const HostEntry* e, PyObject* spec) {
  PyTypeObject* type = Py_TYPE(spec);
  if (type == &PyList_Type) return PyList_GET_SIZE(spec) == 0 || plain_host(e, PyList_GET_ITEM(spec, 0));
  if (type == &PyTuple_Type) return PyTuple_GET_SIZE(spec) == 0 || plain_host(e, PyTuple_GET_ITEM(spec, 0));
  return plain_host(e, spec);
}

// The index of keyword `key` among mpi4py's parameters, or -1. Call sites pass interned names,
// so identity finds them; a name built at run time is compared as text.
Py_ssize_t parameter_index(const HostEntry* e, PyObject* key) {
  for (Py_ssize_t j = 0; j < e->nparams; ++j)
    if (PyTuple_GET_ITEM(e->parameters, j) == key) return j;
  for (Py_ssize_t j = 0; j < e->nparams; ++j)
    if (PyUnicode_Compare(key, PyTuple_GET_ITEM(e->parameters, j)) == 0) return j;
  PyErr_Clear();  // a comparison that failed is no match
  return -1;
}

// Whether the log is quiet enough that the full path would not log this call (it logs from INFO).
bool quiet_log(const HostEntry* e) {
  PyObject* level = PyDict_GetItemWithError(e->log_state, level_key);  // borrowed
  if (level == nullptr || !PyLong_CheckExact(level)) return PyErr_Clear(), false;
  const long value = PyLong_AsLong(level);
  if (value == -1 && PyErr_Occurred()) return PyErr_Clear(), false;
  return value < e->log_level_full;
}

bool gate_open(const HostEntry* e, PyObject* self) {
  if (e->gate == Py_None) return true;
  PyObject* value = PyObject_GetAttr(self, e->gate);
  if (value == nullptr) return PyErr_Clear(), false;
  const bool open = value == Py_True;
  Py_DECREF(value);
  return open;
}

// Whether this call goes to mpi4py as it is: every buffer argument host memory, every keyword
// one of mpi4py's, the log quiet, the gate open. Never leaves a Python error set.
bool direct(const HostEntry* e, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* const* given = args + 1;  // after self
  const Py_ssize_t npositional = nargs - 1;
  for (Py_ssize_t j = 0; j < npositional && j < e->nparams; ++j)
    if (e->is_buffer[j] && !host_spec(e, given[j])) return false;
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    const Py_ssize_t j = parameter_index(e, PyTuple_GET_ITEM(kwnames, k));
    if (j < 0) return false;  // stream=, or a name mpi4py refuses: the full path's to read or pass on
    if (e->is_buffer[j] && !host_spec(e, given[npositional + k])) return false;
  }
  return quiet_log(e) && gate_open(e, args[0]);
}

PyObject* entry_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* e = reinterpret_cast<HostEntry*>(callable);
  if (e->full == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "hpcolls: this buffer method was cleared (at interpreter exit)");
    return nullptr;
  }
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  PyObject* target = nargs >= 1 && direct(e, args, nargs, kwnames) ? e->base : e->full;
  return PyObject_Vectorcall(target, args, nargsf, kwnames);
}

// Read on the class, the entry itself; on an instance, a method bound to it (as a function's).
PyObject* entry_get(PyObject* self, PyObject* obj, PyObject* /*type*/) {
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

PyObject* entry_repr(PyObject* self) {
  PyObject* full = reinterpret_cast<HostEntry*>(self)->full;
  return full != nullptr ? PyUnicode_FromFormat("<hpcolls host entry of %R>", full)
                         : PyUnicode_FromString("<hpcolls host entry, cleared>");
}

int entry_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* e = reinterpret_cast<HostEntry*>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(e->dict);
  Py_VISIT(e->base);
  Py_VISIT(e->full);
  Py_VISIT(e->parameters);
  Py_VISIT(e->host_types);
  Py_VISIT(e->no_buffers);
  Py_VISIT(e->log_state);
  Py_VISIT(e->gate);
  return 0;
}

int entry_clear(PyObject* self) {
  auto* e = reinterpret_cast<HostEntry*>(self);
  Py_CLEAR(e->dict);
  Py_CLEAR(e->base);
  Py_CLEAR(e->full);
  Py_CLEAR(e->parameters);
  Py_CLEAR(e->host_types);
  Py_CLEAR(e->no_buffers);
  Py_CLEAR(e->log_state);
  Py_CLEAR(e->gate);
  return 0;
}

void entry_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  entry_clear(self);
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

// The parameter names, interned, and which of them are buffers; false with an exception set.
bool read_parameters(HostEntry* e, PyObject* parameters, PyObject* buffers) {
  const Py_ssize_t n = PyTuple_GET_SIZE(parameters);
  if (n > kMaxParams) {
    PyErr_Format(PyExc_ValueError, "HostEntry: at most %zd parameters", kMaxParams);
    return false;
  }
  e->parameters = PyTuple_New(n);
  if (e->parameters == nullptr) return false;
  for (Py_ssize_t j = 0; j < n; ++j) {
    PyObject* name = PyTuple_GET_ITEM(parameters, j);
    if (!PyUnicode_CheckExact(name)) {
      PyErr_SetString(PyExc_TypeError, "HostEntry: parameter names must be str");
      return false;
    }
    Py_INCREF(name);
    PyUnicode_InternInPlace(&name);
    PyTuple_SET_ITEM(e->parameters, j, name);
  }
  e->nparams = n;
  const Py_ssize_t nbuf = PyTuple_GET_SIZE(buffers);
  for (Py_ssize_t i = 0; i < nbuf; ++i) {
    const Py_ssize_t j = PyLong_AsSsize_t(PyTuple_GET_ITEM(buffers, i));
    if (j == -1 && PyErr_Occurred()) return false;
    if (j < 0 || j >= n) {
      PyErr_Format(PyExc_ValueError, "HostEntry: buffer index %zd is not a parameter's", j);
      return false;
    }
    e->is_buffer[j] = true;
  }
  return true;
}

PyObject* kept(PyObject* obj) {
  Py_INCREF(obj);
  return obj;
}

PyObject* entry_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"base",       "full",      "parameters",     "buffers", "host_types",
                                   "no_buffers", "log_state", "log_level_full", "gate",    nullptr};
  PyObject *base, *full, *parameters, *buffers, *host_types, *no_buffers, *log_state, *gate;
  long log_level_full;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!O!O!O!O!lO:HostEntry", const_cast<char**>(keywords), &base,
                                   &full, &PyTuple_Type, &parameters, &PyTuple_Type, &buffers, &PyTuple_Type,
                                   &host_types, &PyTuple_Type, &no_buffers, &PyDict_Type, &log_state, &log_level_full,
                                   &gate))
    return nullptr;
  if (!PyCallable_Check(base) || !PyCallable_Check(full)) {
    PyErr_SetString(PyExc_TypeError, "HostEntry: base and full must be callable");
    return nullptr;
  }
  if (gate != Py_None && !PyUnicode_Check(gate)) {
    PyErr_SetString(PyExc_TypeError, "HostEntry: gate must be an attribute name or None");
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(host_types); ++i)
    if (!PyType_Check(PyTuple_GET_ITEM(host_types, i))) {
      PyErr_SetString(PyExc_TypeError, "HostEntry: host_types must be types");
      return nullptr;
    }
  auto* e = reinterpret_cast<HostEntry*>(type->tp_alloc(type, 0));
  if (e == nullptr) return nullptr;
  e->vectorcall = entry_call;
  if (!read_parameters(e, parameters, buffers)) {
    Py_DECREF(e);
    return nullptr;
  }
  e->base = kept(base);
  e->full = kept(full);
  e->host_types = kept(host_types);
  e->no_buffers = kept(no_buffers);
  e->log_state = kept(log_state);
  e->gate = kept(gate);
  e->log_level_full = log_level_full;
  return reinterpret_cast<PyObject*>(e);
}

PyMemberDef entry_members[] = {
    {"__vectorcalloffset__", Py_T_PYSSIZET, offsetof(HostEntry, vectorcall), Py_READONLY, nullptr},
    {"__dictoffset__", Py_T_PYSSIZET, offsetof(HostEntry, dict), Py_READONLY, nullptr},
    {"base", Py_T_OBJECT_EX, offsetof(HostEntry, base), Py_READONLY, "mpi4py's method, which host calls reach"},
    {"full", Py_T_OBJECT_EX, offsetof(HostEntry, full), Py_READONLY, "hpcolls' Python method, for every other call"},
    {"parameters", Py_T_OBJECT_EX, offsetof(HostEntry, parameters), Py_READONLY, "mpi4py's parameters after self"},
    {"gate", Py_T_OBJECT_EX, offsetof(HostEntry, gate), Py_READONLY,
     "the communicator's attribute that must be True, or None"},
    {nullptr, 0, 0, 0, nullptr},
};

PyGetSetDef entry_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot entry_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(entry_new)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_descr_get, reinterpret_cast<void*>(entry_get)},
    {Py_tp_repr, reinterpret_cast<void*>(entry_repr)},
    {Py_tp_dealloc, reinterpret_cast<void*>(entry_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(entry_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(entry_clear)},
    {Py_tp_members, entry_members},
    {Py_tp_getset, entry_getset},
    {Py_tp_doc, const_cast<char*>("HostEntry(base, full, parameters, buffers, host_types, no_buffers, log_state, "
                                  "log_level_full, gate): a buffer method whose host calls go to `base` as they are "
                                  "made and every other call to `full` (native/host_entry/host_entry.cpp).")},
    {0, nullptr},
};

// A method descriptor: `obj.method(...)` calls it with obj first and makes no bound method.
PyType_Spec entry_spec = {"hpcolls._host_entry.HostEntry", sizeof(HostEntry), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                              Py_TPFLAGS_METHOD_DESCRIPTOR,
                          entry_slots};

int module_exec(PyObject* module) {
  level_key = PyUnicode_InternFromString("level");
  if (level_key == nullptr) return -1;
  PyObject* type = PyType_FromSpec(&entry_spec);
  if (type == nullptr) return -1;
  if (PyModule_AddObject(module, "HostEntry", type) < 0) {
    Py_DECREF(type);
    return -1;
  }
  return 0;
}

PyModuleDef_Slot module_slots[] = {{Py_mod_exec, reinterpret_cast<void*>(module_exec)}, {0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                          "_host_entry",
                          "hpcolls' buffer methods in C for host buffers (native/host_entry/host_entry.cpp)",
                          0,
                          nullptr,
                          module_slots,
                          nullptr,
                          nullptr,
                          nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__host_entry() { return PyModuleDef_Init(&module_def); }
