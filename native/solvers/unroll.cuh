// SOLVERS_UNROLL: a fixed-trip loop unrolled on the device (its arrays then live in registers,
// not local memory); SOLVERS_UNROLL_4 (_2): a loop unrolled four (two) ways on the device (a
// running sum whose loads of four iterations then are in flight together). Host compilers do
// not know the pragma.
#pragma once

#if defined(__CUDA_ARCH__)
#define SOLVERS_UNROLL _Pragma("unroll")
#define SOLVERS_UNROLL_4 _Pragma("unroll 4")
#define SOLVERS_UNROLL_2 _Pragma("unroll 2")
#else
#define SOLVERS_UNROLL
#define SOLVERS_UNROLL_4
#define SOLVERS_UNROLL_2
#endif
