// Types shared by host and device code: element types, reduction operators, collectives, and the
// per-communicator state a kernel receives by value.
#pragma once
#include <cstddef>
#include <cstdint>

#include "hpcolls/device/comm.h"

namespace hpcolls {

// Element types, numbered as the Python layer names them (hpcolls/dtypes.py keeps the same order).
enum class DType : int { F16, BF16, F32, F64, C64, C128, I32, I64, U32, U64, I8, U8, I16, U16, Bool, kCount };
enum class Op : int { Sum, Prod, Min, Max, BAnd, BOr, BXor, LAnd, LOr, LXor, kCount };
enum class Algo : int { OneShot, TwoShot, kCount };
enum class Collective : int { Allreduce, Allgather, Bcast, Reduce, ReduceScatter, kCount };

// Ranks a single-node communicator may have on the native path (peer pointers travel by value).
constexpr int kMaxRanks = 32;
// Every LL line carries 8 payload bytes in 16; a thread moves one 16-byte payload chunk = 2 lines.
constexpr size_t kChunkBytes = 16;
constexpr size_t kLinesPerChunk = 2;
// LL store/poll variants (DevComm::ll_mode, ll_line.cuh); kernels are instantiated for each.
constexpr int kLLModes = 4;
// Lines at the start of a half that carry the handshakes of the rooted collectives, one per rank
// (handshake.cuh); their data follows.
constexpr size_t kHandshakeLines = HPCOLLS_DEVICE_HANDSHAKE_LINES;

// The per-communicator state a kernel receives is the device API's plain struct
// (hpcolls/device/comm.h, public and C), so that a user's kernel and ours see one epoch sequence
// and one error record: the counters, the error record and the peer scratch are defined there.
using ErrorRecord = ::hpcolls_error_record_t;
using DeviceCounters = ::hpcolls_device_counters_t;
namespace device {
using Comm = ::hpcolls_device_comm_t;  // what CallState and the shared exchange steps need
}  // namespace device
static_assert(kMaxRanks == HPCOLLS_DEVICE_MAX_RANKS, "one rank limit");

// Everything a host-launched collective kernel needs, passed by value: the device API's struct
// and the host path's launch-time choices after it.
struct DevComm : device::Comm {
  int ll_mode;  // see ll_line.cuh
  int lane_shift;  // one-shot: log2 of the threads given to each 16-byte chunk (oneshot_lane_shift)
  int next_may_start_early;  // 1: the kernel lets the next kernel on its stream start (dependent_launch.cuh)
};

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::I8: case DType::U8: case DType::Bool: return 1;
    case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
    case DType::F32: case DType::I32: case DType::U32: return 4;
    case DType::F64: case DType::I64: case DType::U64: case DType::C64: return 8;
    case DType::C128: return 16;
    default: return 0;
  }
}

// Alignment a buffer of this type is guaranteed to have (that of its scalar component).
inline size_t dtype_alignment(DType t) {
  switch (t) {
    case DType::C64: return 4;
    case DType::C128: return 8;
    default: return dtype_size(t);
  }
}

inline bool dtype_is_complex(DType t) { return t == DType::C64 || t == DType::C128; }

// Names as hpcolls/dtypes.py spells them (NAMES, OP_NAMES), for error messages.
inline const char* dtype_name(DType t) {
  constexpr const char* kNames[] = {"float16", "bfloat16", "float32", "float64", "complex64",
                                    "complex128", "int32", "int64", "uint32", "uint64",
                                    "int8", "uint8", "int16", "uint16", "bool"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(DType::kCount), "a name per DType");
  return int(t) >= 0 && t < DType::kCount ? kNames[int(t)] : "an unknown type";
}
inline const char* op_name(Op op) {
  constexpr const char* kNames[] = {"sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(Op::kCount), "a name per Op");
  return int(op) >= 0 && op < Op::kCount ? kNames[int(op)] : "an unknown op";
}

// Which ops the kernels carry for each type, as MPI defines them: floating point SUM, PROD, MIN,
// MAX; complex SUM, PROD; integers every op; bool (MPI_C_BOOL) the logical ones only.
constexpr bool op_supported(DType t, Op op) {
  switch (t) {
    case DType::F16: case DType::BF16: case DType::F32: case DType::F64:
      return op == Op::Sum || op == Op::Prod || op == Op::Min || op == Op::Max;
    case DType::C64: case DType::C128: return op == Op::Sum || op == Op::Prod;
    case DType::Bool: return op == Op::LAnd || op == Op::LOr || op == Op::LXor;
    case DType::I8: case DType::U8: case DType::I16: case DType::U16:
    case DType::I32: case DType::U32: case DType::I64: case DType::U64:
      return int(op) >= 0 && op < Op::kCount;
    default: return false;
  }
}

}  // namespace hpcolls
