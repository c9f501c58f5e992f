// The scalars of the solver's kernels: float, double, and Complex<float>, Complex<double> (the
// layout of numpy's complex64 / complex128). The arithmetic helpers are host and device code
// alike (the bulge chasing's step runs on both). The kernels are written once over T with these
// helpers; for a real T each helper is the operation itself (conj(x) is x, real_part(x) is x), so
// a real instantiation is the same arithmetic, expression for expression, as before complex came.
//
// Complex arithmetic is the textbook one (no C99 Annex G recovery of infinities, as BLAS does
// not either): a product is four multiplications and two additions, in one fixed order, so
// every rank computes the same bits.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "scalar_type.h"

namespace solvers {

template <typename R>
struct alignas(2 * sizeof(R)) Complex {
  R re, im;
  Complex() = default;  // trivial, so that __shared__ arrays of it are allowed
  __host__ __device__ constexpr Complex(R r, R i = R(0)) : re(r), im(i) {}
  __host__ __device__ Complex& operator+=(Complex o) {
    re += o.re;
    im += o.im;
    return *this;
  }
  __host__ __device__ Complex& operator-=(Complex o) {
    re -= o.re;
    im -= o.im;
    return *this;
  }
};

template <typename R>
__host__ __device__ inline Complex<R> operator+(Complex<R> a, Complex<R> b) { return {a.re + b.re, a.im + b.im}; }
template <typename R>
__host__ __device__ inline Complex<R> operator-(Complex<R> a, Complex<R> b) { return {a.re - b.re, a.im - b.im}; }
template <typename R>
__host__ __device__ inline Complex<R> operator-(Complex<R> a) { return {-a.re, -a.im}; }
template <typename R>
__host__ __device__ inline Complex<R> operator*(Complex<R> a, Complex<R> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <typename R>
__host__ __device__ inline Complex<R> operator*(R a, Complex<R> b) { return {a * b.re, a * b.im}; }

template <typename T> struct Scalar { using Real = T; static constexpr bool kComplex = false; };
template <typename R> struct Scalar<Complex<R>> { using Real = R; static constexpr bool kComplex = true; };
template <typename T> using real_t = typename Scalar<T>::Real;
template <typename T> constexpr bool is_complex_v = Scalar<T>::kComplex;

__host__ __device__ inline float conj(float x) { return x; }
__host__ __device__ inline double conj(double x) { return x; }
template <typename R>
__host__ __device__ inline Complex<R> conj(Complex<R> z) { return {z.re, -z.im}; }

__host__ __device__ inline float real_part(float x) { return x; }
__host__ __device__ inline double real_part(double x) { return x; }
template <typename R>
__host__ __device__ inline R real_part(Complex<R> z) { return z.re; }

__host__ __device__ inline float imag_part(float) { return 0.0f; }
__host__ __device__ inline double imag_part(double) { return 0.0; }
template <typename R>
__host__ __device__ inline R imag_part(Complex<R> z) { return z.im; }

__host__ __device__ inline float r_sqrt(float x) { return sqrtf(x); }
__host__ __device__ inline double r_sqrt(double x) { return sqrt(x); }
__host__ __device__ inline float r_hypot(float x, float y) { return hypotf(x, y); }
__host__ __device__ inline double r_hypot(double x, double y) { return hypot(x, y); }
__host__ __device__ inline float r_copysign(float x, float y) { return copysignf(x, y); }
__host__ __device__ inline double r_copysign(double x, double y) { return copysign(x, y); }
__host__ __device__ inline float r_abs(float x) { return fabsf(x); }
__host__ __device__ inline double r_abs(double x) { return fabs(x); }

template <typename R>
__host__ __device__ inline R abs_of(R x) { return r_abs(x); }
template <typename R>
__host__ __device__ inline R abs_of(Complex<R> z) { return r_hypot(z.re, z.im); }
template <typename R>
__host__ __device__ inline R abs2(R x) { return x * x; }
template <typename R>
__host__ __device__ inline R abs2(Complex<R> z) { return z.re * z.re + z.im * z.im; }
template <typename R>
__host__ __device__ inline R reciprocal(R x) { return R(1) / x; }
template <typename R>
__host__ __device__ inline Complex<R> reciprocal(Complex<R> z) { return (R(1) / abs2(z)) * conj(z); }

// Loads that bypass L1 (data another block of the same kernel wrote, fenced).
__device__ inline float load_cg(const float* p) { return __ldcg(p); }
__device__ inline double load_cg(const double* p) { return __ldcg(p); }
template <typename R>
__device__ inline Complex<R> load_cg(const Complex<R>* p) { return {__ldcg(&p->re), __ldcg(&p->im)}; }

__device__ inline float shfl_xor(float x, int lane_mask) { return __shfl_xor_sync(0xffffffffu, x, lane_mask); }
__device__ inline double shfl_xor(double x, int lane_mask) { return __shfl_xor_sync(0xffffffffu, x, lane_mask); }
template <typename R>
__device__ inline Complex<R> shfl_xor(Complex<R> z, int lane_mask) {
  return {shfl_xor(z.re, lane_mask), shfl_xor(z.im, lane_mask)};
}

// Calls fn with a null pointer of t's scalar type (host side: picks the instantiation).
template <typename Fn>
auto with_scalar(ScalarType t, const char* what, Fn&& fn) {
  switch (t) {
    case ScalarType::F32: return fn(static_cast<float*>(nullptr));
    case ScalarType::F64: return fn(static_cast<double*>(nullptr));
    case ScalarType::C64: return fn(static_cast<Complex<float>*>(nullptr));
    case ScalarType::C128: return fn(static_cast<Complex<double>*>(nullptr));
  }
  throw std::invalid_argument(std::string("solvers: ") + what +
                              " supports float32, float64, complex64 and complex128, not dtype code " +
                              std::to_string(int(t)));
}

}  // namespace solvers
