// Maps the run-time (DType, Op) pair to a template instantiation, once for every algorithm: each
// kernel file passes a generic lambda that launches its kernel for <T, OP>, and device code that
// runs an operation of a run-time pair passes one that runs it.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/reduce_ops.cuh"
#include "hpcolls/types.h"

namespace hpcolls {

// visit(T{}, std::integral_constant<Op, op>{}) when <T, op> is instantiated (kSupported), else
// `none`. Host and device code (nv_exec_check_disable: a host caller's visitor launches kernels).
#pragma nv_exec_check_disable
template <typename T, Op OP, typename R, typename F>
__host__ __device__ bool visit_if_instantiated(F& visit, R& result) {
  if constexpr (kSupported<T, OP>) result = visit(T{}, std::integral_constant<Op, OP>{});
  return true;
}
#pragma nv_exec_check_disable
template <typename T, typename R, typename F, int... kOps>
__host__ __device__ R visit_op(Op op, F& visit, R none, std::integer_sequence<int, kOps...>) {
  R result = none;
  (void)((int(op) == kOps && visit_if_instantiated<T, Op(kOps)>(visit, result)) || ...);
  return result;
}
#pragma nv_exec_check_disable
template <typename T, typename R, typename F>
__host__ __device__ R visit_op(Op op, F& visit, R none) {
  return visit_op<T>(op, visit, none, std::make_integer_sequence<int, int(Op::kCount)>{});
}
// A signed integer type: MIN and MAX of its own, every other op as its unsigned twin (kSupported).
#pragma nv_exec_check_disable
template <typename S, typename U, typename R, typename F>
__host__ __device__ R visit_signed(Op op, F& visit, R none) {
  return op == Op::Min || op == Op::Max ? visit_op<S>(op, visit, none) : visit_op<U>(op, visit, none);
}

// visit(T{}, std::integral_constant<Op, OP>{}) -> R, for the instantiation that carries (t, op);
// `none` for a type code out of range. The caller has checked the pair with op_supported: this is
// the one map from the run-time pair to an instantiation, for the host's kernel launches
// (dispatch() below) and for device code that runs an operation of a run-time pair
// (resident_service.cu).
#pragma nv_exec_check_disable
template <typename R, typename F>
__host__ __device__ R visit_element(DType t, Op op, F&& visit, R none) {
  switch (t) {
    case DType::F16: return visit_op<__half>(op, visit, none);
    case DType::BF16: return visit_op<__nv_bfloat16>(op, visit, none);
    case DType::F32: return visit_op<float>(op, visit, none);
    case DType::F64: return visit_op<double>(op, visit, none);
    case DType::C64: return visit_op<cfloat>(op, visit, none);
    case DType::C128: return visit_op<cdouble>(op, visit, none);
    case DType::I8: return visit_signed<int8_t, uint8_t>(op, visit, none);
    case DType::I16: return visit_signed<int16_t, uint16_t>(op, visit, none);
    case DType::I32: return visit_signed<int32_t, uint32_t>(op, visit, none);
    case DType::I64: return visit_signed<int64_t, uint64_t>(op, visit, none);
    case DType::U8: case DType::Bool: return visit_op<uint8_t>(op, visit, none);
    case DType::U16: return visit_op<uint16_t>(op, visit, none);
    case DType::U32: return visit_op<uint32_t>(op, visit, none);
    case DType::U64: return visit_op<uint64_t>(op, visit, none);
    default: return none;
  }
}

// launch(T{}, std::integral_constant<Op, OP>{}) -> cudaError_t, for the instantiation that
// carries (t, op); cudaErrorInvalidValue for a pair the kernels do not carry (op_supported).
template <typename F>
cudaError_t dispatch(DType t, Op op, F&& launch) {
  if (!op_supported(t, op)) return cudaErrorInvalidValue;
  return visit_element(t, op, launch, cudaErrorInvalidValue);
}

// The small-message kernel instantiation for the rank count: pick(std::integral_constant<int, N>{})
// for N in kSmallOneShotRanks (oneshot_small_fits admits no other count).
template <typename Pick>
auto small_kernel_for_ranks(int nranks, Pick pick) {
  static_assert(sizeof(kSmallOneShotRanks) == 3 * sizeof(int) && kSmallOneShotRanks[0] == 2 &&
                    kSmallOneShotRanks[1] == 4 && kSmallOneShotRanks[2] == 8,
                "the cases below are kSmallOneShotRanks");
  switch (nranks) {
    case 2: return pick(std::integral_constant<int, 2>{});
    case 4: return pick(std::integral_constant<int, 4>{});
    default: return pick(std::integral_constant<int, 8>{});
  }
}

// Launches the AllReduce kernel instantiation that pick(T{}, op tag) returns for (t, op), built
// for LL mode kMode (ll_line.cuh; the default build has mode 0 only, the diagnostic module the
// others): every algorithm's kernels share one signature, so only the choice of kernel differs
// per file.
// Launches `kernel` with a's grid and dependent-launch setting and the given arguments.
template <typename Kernel, typename... Args>
cudaError_t launch_kernel(const CollectiveArgs& a, Kernel kernel, Args... args) {
  int threads = a.threads;
  if (threads > kThreadsPerBlock) {  // only a forced block size (diagnosis) can be too large
    cudaFuncAttributes attr;
    if (const cudaError_t e = cudaFuncGetAttributes(&attr, kernel)) return e;
    threads = std::min(threads, attr.maxThreadsPerBlock / 32 * 32);  // the grid-stride loops cover the rest
  }
  cudaLaunchAttribute dependent = dependent_launch_attribute();
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(a.blocks));
  cfg.blockDim = dim3(unsigned(threads));
  cfg.stream = a.stream;
  cfg.attrs = a.dependent_launch ? &dependent : nullptr;
  cfg.numAttrs = a.dependent_launch ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

template <int kMode, typename Pick>
cudaError_t launch_allreduce_kernel(const DevComm& c, DType t, Op op, const CollectiveArgs& a, Pick pick) {
  if (c.ll_mode != kMode) return cudaErrorInvalidValue;
  return dispatch(t, op, [&](auto type_tag, auto op_tag) {
    return launch_kernel(a, pick(type_tag, op_tag), c, static_cast<const char*>(a.send), static_cast<char*>(a.recv),
                         uint32_t(a.bytes), a.vec_ok);
  });
}

}  // namespace hpcolls
