// Maps the run-time (DType, Op) pair to a kernel template instantiation, once for every
// algorithm: each kernel file passes a generic lambda that launches its kernel for <T, OP>.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "hpcolls/collective_args.h"
#include "hpcolls/dependent_launch.cuh"
#include "hpcolls/reduce_ops.cuh"
#include "hpcolls/types.h"

namespace hpcolls {

template <typename T> struct Unit { static constexpr size_t value = sizeof(T); };
template <> struct Unit<cfloat> { static constexpr size_t value = 4; };
template <> struct Unit<cdouble> { static constexpr size_t value = 8; };

template <typename T, typename F>
cudaError_t dispatch_op(Op op, F&& launch) {
  auto one = [&](auto op_tag) -> cudaError_t {
    constexpr Op kOp = decltype(op_tag)::value;
    if constexpr (kSupported<T, kOp>) return launch(T{}, op_tag);
    else return cudaErrorInvalidValue;
  };
  switch (op) {
    case Op::Sum: return one(std::integral_constant<Op, Op::Sum>{});
    case Op::Prod: return one(std::integral_constant<Op, Op::Prod>{});
    case Op::Min: return one(std::integral_constant<Op, Op::Min>{});
    case Op::Max: return one(std::integral_constant<Op, Op::Max>{});
    default: return cudaErrorInvalidValue;
  }
}

// launch(T{}, std::integral_constant<Op, OP>{}) -> cudaError_t
template <typename F>
cudaError_t dispatch(DType t, Op op, F&& launch) {
  switch (t) {
    case DType::F16: return dispatch_op<__half>(op, launch);
    case DType::BF16: return dispatch_op<__nv_bfloat16>(op, launch);
    case DType::F32: return dispatch_op<float>(op, launch);
    case DType::F64: return dispatch_op<double>(op, launch);
    case DType::C64: return dispatch_op<cfloat>(op, launch);
    case DType::C128: return dispatch_op<cdouble>(op, launch);
    case DType::I32: return dispatch_op<int32_t>(op, launch);
    case DType::I64: return dispatch_op<int64_t>(op, launch);
    case DType::U32: return dispatch_op<uint32_t>(op, launch);
    case DType::U64: return dispatch_op<uint64_t>(op, launch);
    default: return cudaErrorInvalidValue;
  }
}

// launch(std::integral_constant<int, M>{}) for the LL mode M (ll_line.cuh) a communicator uses.
template <typename F>
cudaError_t dispatch_ll_mode(int mode, F&& launch) {
  switch (mode) {
    case 0: return launch(std::integral_constant<int, 0>{});
    case 1: return launch(std::integral_constant<int, 1>{});
    case 2: return launch(std::integral_constant<int, 2>{});
    case 3: return launch(std::integral_constant<int, 3>{});
    default: return cudaErrorInvalidValue;
  }
}

// Launches the AllReduce kernel instantiation that pick(T{}, op tag, LL mode tag) returns for
// (t, op, c.ll_mode): every algorithm's kernels share one signature, so only the choice of kernel
// differs per file.
template <typename Pick>
cudaError_t launch_allreduce_kernel(const DevComm& c, DType t, Op op, const AllreduceArgs& a, Pick pick) {
  return dispatch(t, op, [&](auto type_tag, auto op_tag) {
    return dispatch_ll_mode(c.ll_mode, [&](auto mode_tag) {
      const auto kernel = pick(type_tag, op_tag, mode_tag);
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
      return cudaLaunchKernelEx(&cfg, kernel, c, static_cast<const char*>(a.send), static_cast<char*>(a.recv),
                                uint32_t(a.bytes), a.vec_ok);
    });
  });
}

}  // namespace hpcolls
