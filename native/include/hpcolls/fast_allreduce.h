// Communicator.Allreduce's common call in C (fast_allreduce.cpp).
#pragma once
#include <pybind11/pybind11.h>

namespace hpcolls {

// Adds make_fast_allreduce(), cupy_current_stream() and cupy_stream_reader() to the module.
void bind_fast_allreduce(pybind11::module_& m);

}  // namespace hpcolls
