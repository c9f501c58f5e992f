// The common call of each collective the native kernels carry, in C (fast_entry.cpp).
#pragma once
#include <pybind11/pybind11.h>

namespace hpcolls {

// Adds FAST_ENTRIES, make_fast_entry(), cupy_current_stream() and cupy_stream_reader() to the module.
void bind_fast_entries(pybind11::module_& m);

}  // namespace hpcolls
