// Python callables run in a CUDA stream's order (host_call.cpp).
#pragma once
#include <pybind11/pybind11.h>

namespace hpcolls {

// Adds launch_host_call() and release_host_call() to the module.
void bind_host_calls(pybind11::module_& m);

}  // namespace hpcolls
