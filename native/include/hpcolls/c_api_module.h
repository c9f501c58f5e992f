// How hpcolls._native publishes its C entry (c_api.h; c_api.cpp).
#pragma once
#include <pybind11/pybind11.h>

namespace hpcolls {

// Adds the function table's capsule (attribute c_api_v1) and C_API_VERSION to the module.
void bind_c_api(pybind11::module_& m);

// A handle capsule (HPCOLLS_COMM_CAPSULE) for a NativeComm's Python object; it keeps the object alive.
pybind11::capsule comm_capsule(pybind11::handle native_comm);

}  // namespace hpcolls
