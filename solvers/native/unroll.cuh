// SOLVERS_UNROLL: a fixed-trip loop unrolled on the device (its arrays then live in registers,
// not local memory); host compilers do not know the pragma.
#pragma once

#if defined(__CUDA_ARCH__)
#define SOLVERS_UNROLL _Pragma("unroll")
#else
#define SOLVERS_UNROLL
#endif
