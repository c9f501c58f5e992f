// The element types of the solver's kernels, numbered as hpcolls numbers them (hpcolls_dtype in
// its C entry), so a type code passes to hpcolls' AllReduce as it is.
#pragma once
#include "hpcolls/c_api.h"

namespace solvers {

enum class ScalarType : int { F32 = HPCOLLS_F32, F64 = HPCOLLS_F64, C64 = HPCOLLS_C64, C128 = HPCOLLS_C128 };

}  // namespace solvers
