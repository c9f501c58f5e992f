#include "mpi_abi.h"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "hpcolls/types.h"
#include "libmpi.h"

namespace hpcolls_pmpi {
namespace {

using hpcolls::DType;
using hpcolls::Op;

// How a predefined type's elements read: its kind, and (from its size) the kernels' DType.
enum class Kind { Float, Complex, Signed, Unsigned, Bool, Bytes };

int dtype_for(Kind kind, int size) {
  switch (kind) {
    case Kind::Float: return size == 4 ? int(DType::F32) : size == 8 ? int(DType::F64) : -2;
    case Kind::Complex: return size == 8 ? int(DType::C64) : size == 16 ? int(DType::C128) : -2;
    case Kind::Signed:
      return size == 1 ? int(DType::I8) : size == 2 ? int(DType::I16) : size == 4 ? int(DType::I32)
             : size == 8 ? int(DType::I64) : -2;
    case Kind::Unsigned:
      return size == 1 ? int(DType::U8) : size == 2 ? int(DType::U16) : size == 4 ? int(DType::U32)
             : size == 8 ? int(DType::U64) : -2;
    case Kind::Bool: return size == 1 ? int(DType::Bool) : -1;
    case Kind::Bytes: return -1;
  }
  return -2;
}

struct NamedType {
  const char* open_mpi;   // the exported object's name in Open MPI's libmpi
  long mpich;             // the handle in MPICH's mpi.h (0: not listed here)
  Kind kind;
};

// Predefined types the kernels take: C, C99 fixed width, C++ and Fortran names. The MPICH column
// lists only the C types whose values are confirmed from MPICH's mpi.h; the others go to MPI
// there. Fortran LOGICAL moves as bytes only (its true is not C's).
constexpr NamedType kTypes[] = {
    {"ompi_mpi_float", 0x4c00040a, Kind::Float},         {"ompi_mpi_double", 0x4c00080b, Kind::Float},
    {"ompi_mpi_int", 0x4c000405, Kind::Signed},          {"ompi_mpi_unsigned", 0x4c000406, Kind::Unsigned},
    {"ompi_mpi_long", 0x4c000807, Kind::Signed},         {"ompi_mpi_unsigned_long", 0x4c000808, Kind::Unsigned},
    {"ompi_mpi_long_long_int", 0x4c000809, Kind::Signed},
    {"ompi_mpi_unsigned_long_long", 0x4c000819, Kind::Unsigned},
    {"ompi_mpi_short", 0x4c000203, Kind::Signed},        {"ompi_mpi_unsigned_short", 0x4c000204, Kind::Unsigned},
    {"ompi_mpi_signed_char", 0x4c000118, Kind::Signed},  {"ompi_mpi_unsigned_char", 0x4c000102, Kind::Unsigned},
    {"ompi_mpi_char", 0x4c000101, Kind::Bytes},          {"ompi_mpi_byte", 0x4c00010d, Kind::Bytes},
    {"ompi_mpi_int8_t", 0, Kind::Signed},                {"ompi_mpi_int16_t", 0, Kind::Signed},
    {"ompi_mpi_int32_t", 0, Kind::Signed},               {"ompi_mpi_int64_t", 0, Kind::Signed},
    {"ompi_mpi_uint8_t", 0, Kind::Unsigned},             {"ompi_mpi_uint16_t", 0, Kind::Unsigned},
    {"ompi_mpi_uint32_t", 0, Kind::Unsigned},            {"ompi_mpi_uint64_t", 0, Kind::Unsigned},
    {"ompi_mpi_c_bool", 0, Kind::Bool},                  {"ompi_mpi_cxx_bool", 0, Kind::Bool},
    {"ompi_mpi_c_float_complex", 0, Kind::Complex},      {"ompi_mpi_c_complex", 0, Kind::Complex},
    {"ompi_mpi_c_double_complex", 0, Kind::Complex},     {"ompi_mpi_cxx_cplex", 0, Kind::Complex},
    {"ompi_mpi_cxx_dblcplex", 0, Kind::Complex},
    {"ompi_mpi_real", 0, Kind::Float},                   {"ompi_mpi_dblprec", 0, Kind::Float},
    {"ompi_mpi_real4", 0, Kind::Float},                  {"ompi_mpi_real8", 0, Kind::Float},
    {"ompi_mpi_integer", 0, Kind::Signed},               {"ompi_mpi_integer1", 0, Kind::Signed},
    {"ompi_mpi_integer2", 0, Kind::Signed},              {"ompi_mpi_integer4", 0, Kind::Signed},
    {"ompi_mpi_integer8", 0, Kind::Signed},              {"ompi_mpi_cplex", 0, Kind::Complex},
    {"ompi_mpi_dblcplex", 0, Kind::Complex},             {"ompi_mpi_complex8", 0, Kind::Complex},
    {"ompi_mpi_complex16", 0, Kind::Complex},            {"ompi_mpi_logical", 0, Kind::Bytes},
    {"ompi_mpi_character", 0, Kind::Bytes},
};

struct NamedOp {
  const char* open_mpi;
  long mpich;
  Op op;
};
constexpr NamedOp kOps[] = {
    {"ompi_mpi_op_sum", 0x58000003, Op::Sum},   {"ompi_mpi_op_prod", 0x58000004, Op::Prod},
    {"ompi_mpi_op_min", 0x58000002, Op::Min},   {"ompi_mpi_op_max", 0x58000001, Op::Max},
    {"ompi_mpi_op_band", 0x58000006, Op::BAnd}, {"ompi_mpi_op_bor", 0x58000008, Op::BOr},
    {"ompi_mpi_op_bxor", 0x5800000a, Op::BXor}, {"ompi_mpi_op_land", 0x58000005, Op::LAnd},
    {"ompi_mpi_op_lor", 0x58000007, Op::LOr},   {"ompi_mpi_op_lxor", 0x58000009, Op::LXor},
};

struct Tables {
  MpiAbi abi{};
  std::vector<std::pair<Handle, KnownType>> types;  // most used first (the table's order)
  std::vector<std::pair<Handle, int>> ops;
};

Handle mpich_handle(long value) { return reinterpret_cast<Handle>(static_cast<std::intptr_t>(value)); }

Tables* build() {
  auto* t = new Tables{};
  // MPI_Get_library_version names the implementation (callable before MPI_Init); MPI_MAX_LIBRARY_
  // VERSION_STRING is 256 in Open MPI and 8192 in MPICH.
  static char version[8192 + 1];
  int length = 0;
  auto library_version = next<int (*)(char*, int*)>("PMPI_Get_library_version");
  if (library_version == nullptr || library_version(version, &length) != kSuccess) length = 0;
  version[length < 0 || length > 8192 ? 0 : length] = '\0';
  const bool open_mpi = libmpi_object("ompi_mpi_comm_world") != nullptr;
  const bool mpich = !open_mpi && (std::strstr(version, "MPICH") != nullptr || std::strstr(version, "MVAPICH") != nullptr);
  if (!open_mpi && !mpich) {
    delete t;
    return nullptr;
  }
  auto type_size = next<int (*)(Handle, int*)>("PMPI_Type_size");
  auto handle_of = [&](const char* name, long value) -> Handle {
    return open_mpi ? libmpi_object(name) : (value != 0 ? mpich_handle(value) : nullptr);
  };
  for (const NamedType& n : kTypes) {
    Handle h = handle_of(n.open_mpi, n.mpich);
    int size = 0;
    if (h == nullptr || type_size == nullptr || type_size(h, &size) != kSuccess || size <= 0) continue;
    const int dtype = dtype_for(n.kind, size);
    if (dtype == -2) continue;  // a size the kernels have no type for (REAL*16, ...): MPI takes it
    t->types.push_back({h, KnownType{dtype, size}});
  }
  for (const NamedOp& n : kOps)
    if (Handle h = handle_of(n.open_mpi, n.mpich)) t->ops.push_back({h, int(n.op)});

  MpiAbi& a = t->abi;
  if (open_mpi) {
    a.flavour = "Open MPI";
    a.in_place = reinterpret_cast<void*>(1);
    a.status_ignore = nullptr;
    a.statuses_ignore = nullptr;
    a.byte = libmpi_object("ompi_mpi_byte");
    a.int_ = libmpi_object("ompi_mpi_int");
    a.int64 = libmpi_object("ompi_mpi_int64_t");
    a.op_sum = libmpi_object("ompi_mpi_op_sum");
    a.op_min = libmpi_object("ompi_mpi_op_min");
    a.request_null = libmpi_object("ompi_request_null");
    a.request_bytes = int(sizeof(void*));
    a.err_other = 16;
    // A Fortran program that names MPI_IN_PLACE holds its own copy of that common block, as a C
    // program holds its MPI_DOUBLE (libmpi_object).
    a.fortran_in_place = libmpi_object("mpi_fortran_in_place_");
    a.fortran_reaches_c = false;
  } else {
    a.flavour = "MPICH";
    a.in_place = reinterpret_cast<void*>(-1);
    a.status_ignore = reinterpret_cast<void*>(1);
    a.statuses_ignore = reinterpret_cast<void*>(1);
    a.byte = mpich_handle(0x4c00010d);
    a.int_ = mpich_handle(0x4c000405);
    a.int64 = mpich_handle(0x4c000809);  // MPI_LONG_LONG: 8 bytes wherever MPICH runs
    a.op_sum = mpich_handle(0x58000003);
    a.op_min = mpich_handle(0x58000002);
    a.request_null = mpich_handle(0x2c000000);
    a.request_bytes = int(sizeof(int));
    a.err_other = 15;
    a.fortran_in_place = nullptr;  // MPICH's Fortran layer is reached through its C calls
    // (libmpifort's mpi_allreduce_ and mpi_allreduce_f08ts_ call MPI_Allreduce, whose handles
    // are the Fortran integers: MPI_Type_f2c & co. are macros there, no functions to call)
    a.fortran_reaches_c = true;
  }
  return t;
}

std::once_flag g_once;
Tables* g_tables = nullptr;

const Tables* tables() {
  if (libmpi_symbol("PMPI_Get_version") == nullptr) return nullptr;  // not loaded yet: ask again later
  std::call_once(g_once, [] { g_tables = build(); });
  return g_tables;
}

}  // namespace

const MpiAbi* mpi_abi() {
  const Tables* t = tables();
  return t != nullptr ? &t->abi : nullptr;
}

KnownType known_type(Handle datatype) {
  if (const Tables* t = tables())
    for (const auto& entry : t->types)
      if (entry.first == datatype) return entry.second;
  return {};
}

int known_op(Handle op) {
  if (const Tables* t = tables())
    for (const auto& entry : t->ops)
      if (entry.first == op) return entry.second;
  return -1;
}

}  // namespace hpcolls_pmpi
