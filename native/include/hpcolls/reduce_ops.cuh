// Reduction operators per element type. Every rank applies them in rank order 0..N-1, so the
// result is bitwise identical on all ranks and across repeated calls.
//
// Floating-point SUM/PROD use the explicitly rounded intrinsics so the compiler cannot contract
// a complex product into FMAs: the result is the plain IEEE formula, reproducible on the CPU.
// MIN/MAX propagate NaN (the first NaN in rank order wins) and keep the earlier rank's value on
// ties such as -0.0 vs +0.0. Integer SUM/PROD wrap modulo 2^bits (computed unsigned: no UB).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "hpcolls/types.h"

namespace hpcolls {

struct cfloat { float re, im; };
struct cdouble { double re, im; };

// The scalar alignment of an element type: the unit its payload moves in where a buffer is not
// 16-byte aligned (payload.cuh's load_chunk<kUnit>).
template <typename T> struct Unit { static constexpr size_t value = sizeof(T); };
template <> struct Unit<cfloat> { static constexpr size_t value = 4; };
template <> struct Unit<cdouble> { static constexpr size_t value = 8; };

template <typename T> struct Arith;  // add / mul / lt / isnan for each real scalar type

template <> struct Arith<float> {
  __device__ static float add(float a, float b) { return __fadd_rn(a, b); }
  __device__ static float mul(float a, float b) { return __fmul_rn(a, b); }
  __device__ static float sub(float a, float b) { return __fsub_rn(a, b); }
  __device__ static bool lt(float a, float b) { return a < b; }
  __device__ static bool isnan(float a) { return a != a; }
};
template <> struct Arith<double> {
  __device__ static double add(double a, double b) { return __dadd_rn(a, b); }
  __device__ static double mul(double a, double b) { return __dmul_rn(a, b); }
  __device__ static double sub(double a, double b) { return __dsub_rn(a, b); }
  __device__ static bool lt(double a, double b) { return a < b; }
  __device__ static bool isnan(double a) { return a != a; }
};
template <> struct Arith<__half> {
  __device__ static __half add(__half a, __half b) { return __hadd(a, b); }
  __device__ static __half mul(__half a, __half b) { return __hmul(a, b); }
  __device__ static bool lt(__half a, __half b) { return __hlt(a, b); }
  __device__ static bool isnan(__half a) { return __hisnan(a); }
};
template <> struct Arith<__nv_bfloat16> {
  __device__ static __nv_bfloat16 add(__nv_bfloat16 a, __nv_bfloat16 b) { return __hadd(a, b); }
  __device__ static __nv_bfloat16 mul(__nv_bfloat16 a, __nv_bfloat16 b) { return __hmul(a, b); }
  __device__ static bool lt(__nv_bfloat16 a, __nv_bfloat16 b) { return __hlt(a, b); }
  __device__ static bool isnan(__nv_bfloat16 a) { return __hisnan(a); }
};

template <typename U> struct IntArith {  // U: the unsigned type of the same width
  // Computed in U, or in 32 bits for narrower U: promoted to int, a 16-bit product could overflow.
  using Wide = std::conditional_t<(sizeof(U) < sizeof(uint32_t)), uint32_t, U>;
  template <typename T> __device__ static T add(T a, T b) { return T(Wide(U(a)) + Wide(U(b))); }
  template <typename T> __device__ static T mul(T a, T b) { return T(Wide(U(a)) * Wide(U(b))); }
  template <typename T> __device__ static bool lt(T a, T b) { return a < b; }
  template <typename T> __device__ static bool isnan(T) { return false; }
};
template <> struct Arith<int8_t> : IntArith<uint8_t> {};
template <> struct Arith<int16_t> : IntArith<uint16_t> {};
template <> struct Arith<int32_t> : IntArith<uint32_t> {};
template <> struct Arith<int64_t> : IntArith<uint64_t> {};
template <> struct Arith<uint8_t> : IntArith<uint8_t> {};
template <> struct Arith<uint16_t> : IntArith<uint16_t> {};
template <> struct Arith<uint32_t> : IntArith<uint32_t> {};
template <> struct Arith<uint64_t> : IntArith<uint64_t> {};

// The logical ops give 0 or 1, as MPI_LAND, MPI_LOR and MPI_LXOR do.
template <typename T, Op OP> struct Reduce {
  using A = Arith<T>;
  __device__ static T apply(T a, T b) {
    if constexpr (OP == Op::Sum) return A::add(a, b);
    if constexpr (OP == Op::Prod) return A::mul(a, b);
    if constexpr (OP == Op::Min) return takes_b(a, b, A::lt(b, a)) ? b : a;
    if constexpr (OP == Op::Max) return takes_b(a, b, A::lt(a, b)) ? b : a;
    if constexpr (OP == Op::BAnd) return T(a & b);
    if constexpr (OP == Op::BOr) return T(a | b);
    if constexpr (OP == Op::BXor) return T(a ^ b);
    if constexpr (OP == Op::LAnd) return T((a != 0) & (b != 0));
    if constexpr (OP == Op::LOr) return T((a != 0) | (b != 0));
    if constexpr (OP == Op::LXor) return T((a != 0) != (b != 0));
  }
  // MIN/MAX keep a unless b is better, or b is the first NaN. A comparison with a NaN is false,
  // so `better` is false whenever a is NaN. Bitwise operators, not && and ||: the three tests are
  // evaluated together and selected without branches.
  __device__ static bool takes_b(T a, T b, bool better) { return better | (A::isnan(b) & !A::isnan(a)); }
};

// Complex: SUM and PROD only (the host rejects MIN/MAX on complex with a clear error).
template <typename C, typename R, Op OP> struct ComplexReduce {
  using A = Arith<R>;
  __device__ static C apply(C a, C b) {
    static_assert(OP == Op::Sum || OP == Op::Prod, "complex MIN/MAX is not defined");
    if constexpr (OP == Op::Sum) return C{A::add(a.re, b.re), A::add(a.im, b.im)};
    // (ar*br - ai*bi) + (ar*bi + ai*br) i, each product rounded once: the textbook formula.
    return C{A::sub(A::mul(a.re, b.re), A::mul(a.im, b.im)),
             A::add(A::mul(a.re, b.im), A::mul(a.im, b.re))};
  }
};
template <Op OP> struct Reduce<cfloat, OP> : ComplexReduce<cfloat, float, OP> {};
template <Op OP> struct Reduce<cdouble, OP> : ComplexReduce<cdouble, double, OP> {};

// Which (type, op) pairs are instantiated: the dispatcher (dispatch.cuh) launches only these.
// A signed integer type has only MIN and MAX of its own: every other op gives the same bits on
// its unsigned twin (two's complement wraps alike; the bitwise and logical ops do not look at the
// sign), so those run as the unsigned type, and bool (0 or 1 in a byte) runs as uint8.
template <typename T> constexpr bool kIsComplex = std::is_same_v<T, cfloat> || std::is_same_v<T, cdouble>;
template <typename T> constexpr bool kIsInteger = std::is_integral_v<T>;
template <Op OP> constexpr bool kOrdering = OP == Op::Min || OP == Op::Max;
template <Op OP> constexpr bool kArithmetic = OP == Op::Sum || OP == Op::Prod || kOrdering<OP>;
template <typename T, Op OP> constexpr bool kSupported =
    kIsComplex<T>                                   ? (OP == Op::Sum || OP == Op::Prod)
    : !kIsInteger<T>                                ? kArithmetic<OP>
    : std::is_signed_v<T>                           ? kOrdering<OP>
                                                    : true;

}  // namespace hpcolls
