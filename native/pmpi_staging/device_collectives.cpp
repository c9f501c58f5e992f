#include "device_collectives.h"

#include <exception>
#include <vector>

#include "call_staging.h"
#include "comm_query.h"
#include "device_comm.h"
#include "device_memory.h"
#include "errors.h"
#include "hpcolls/types.h"
#include "libmpi.h"
#include "mpi_abi.h"
#include "resident_calls.h"

namespace hpcolls_pmpi {
namespace {

using hpcolls::DType;
using hpcolls::Op;

// Runs the call on the communicator's device state: on its resident kernel where `resident` is
// given and run_resident takes it, else by `launch` (a NativeComm call returning >= 0 when
// launched, -1 when the plan does not take it); the result:
enum class Outcome { Done, NotTaken, Failed };
template <class LaunchFn>
Outcome run_native(Handle comm, int device, const Launch& how, LaunchFn launch, int* err,
                   const hpcolls::ResidentRequest* resident = nullptr) {
  *err = kSuccess;
  if (device < 0) return Outcome::NotTaken;  // the test hook's pretend device memory: staged
  DeviceComm* dc = nullptr;
  *err = device_comm(comm, device, &dc);
  if (*err != kSuccess) return Outcome::Failed;
  if (!dc->native) return how.enqueue ? (*err = error_codef("enqueue: no native path on this communicator (%s)",
                                                            dc->why_off.c_str()), Outcome::Failed)
                                      : Outcome::NotTaken;
  if (!how.enqueue && resident != nullptr) {
    switch (run_resident(*dc, *resident, err)) {
      case ResidentOutcome::Done: return Outcome::Done;
      case ResidentOutcome::Failed: return Outcome::Failed;
      case ResidentOutcome::NotTaken: break;
    }
  }
  try {
    const cudaStream_t stream = how.enqueue ? how.stream : call_stream(*dc);
    if (launch(*dc->native, reinterpret_cast<uintptr_t>(stream)) < 0) {
      if (!how.enqueue) return Outcome::NotTaken;
      *err = error_code("enqueue: the native kernels do not carry this call whole (message size or layout)");
      return Outcome::Failed;
    }
    if (how.enqueue) {
      dc->enqueued_since_wait = true;
    } else {
      wait_for_call(*dc, stream);  // every call before it on the communicator is done too
      dc->enqueued_since_wait = false;
    }
    return Outcome::Done;
  } catch (const std::exception& e) {
    *err = error_codef("%s", e.what());
    return Outcome::Failed;
  }
}

// A call for the resident kernel (resident_calls.h): the message's bytes as ResidentRequest counts them.
hpcolls::ResidentRequest resident_call(hpcolls::ResidentKind kind, const void* send, void* recv, size_t bytes,
                                       DType t = DType::U8, Op o = Op::Sum, int root = 0) {
  hpcolls::ResidentRequest r{};
  r.kind = int32_t(kind);
  r.send = uint64_t(reinterpret_cast<uintptr_t>(send));
  r.recv = uint64_t(reinterpret_cast<uintptr_t>(recv));
  r.bytes = bytes;
  r.dtype = int32_t(t);
  r.op = int32_t(o);
  r.root = root;
  return r;
}

// The reductions the kernels carry: a predefined type with an element type and a predefined op
// defined for it; -1 otherwise (MPI takes the call).
bool reduction(Handle datatype, Handle op, DType* t, Op* o) {
  const KnownType k = known_type(datatype);
  const int code = known_op(op);
  if (k.dtype < 0 || code < 0 || !hpcolls::op_supported(DType(k.dtype), Op(code))) return false;
  *t = DType(k.dtype);
  *o = Op(code);
  return true;
}

}  // namespace

// Whether the kernels carry this predefined type (and, for reduces != 0, this op on it): a test of
// the handle tables against the handles a program passes (tests/pmpi/collectives_cpu.c).
HPCOLLS_PMPI_EXPORT int hpcolls_pmpi_staging_kernels_carry(Handle datatype, Handle op, int reduces) {
  DType t;
  Op o;
  return reduces ? int(reduction(datatype, op, &t, &o)) : int(known_type(datatype).size > 0);
}

int comm_error(Handle comm, int code) {
  static const auto call_errhandler = next<int (*)(Handle, int)>("PMPI_Comm_call_errhandler");
  if (call_errhandler != nullptr) call_errhandler(comm, code);
  return code;
}

int device_allreduce(const void* send, void* recv, int count, Handle datatype, Handle op, Handle comm,
                     const Launch& how) {
  DType t;
  Op o;
  Outcome outcome = Outcome::NotTaken;
  int err = kSuccess;
  if (count >= 0 && reduction(datatype, op, &t, &o)) {
    const void* s = in_place(send) ? recv : send;
    const auto resident = resident_call(hpcolls::ResidentKind::Allreduce, s, recv,
                                        size_t(count) * hpcolls::dtype_size(t), t, o);
    outcome = run_native(comm, locate(recv).device, how, [&](hpcolls::NativeComm& nc, uintptr_t stream) {
      return nc.allreduce(uintptr_t(s), uintptr_t(recv), size_t(count), t, o, stream);
    }, &err, &resident);
  } else if (how.enqueue) {
    return comm_error(comm, error_code("enqueue: Allreduce of a type or op the kernels do not carry"));
  }
  if (outcome == Outcome::Failed) return comm_error(comm, err);
  if (outcome == Outcome::Done) return kSuccess;
  static const auto pmpi = next<int (*)(const void*, void*, int, Handle, Handle, Handle)>("PMPI_Allreduce");
  CallStaging staging("MPI_Allreduce");
  void *sb = const_cast<void*>(send), *rb = nullptr;
  if (!in_place(send)) err = staging.typed(send, count, datatype, Access::read, &sb);
  if (err == kSuccess) err = staging.typed(recv, count, datatype, Access::write, &rb);
  if (err != kSuccess) return comm_error(comm, err);
  return staging.finish(pmpi(sb, rb, count, datatype, op, comm));
}

int device_bcast(void* buf, int count, Handle datatype, int root, Handle comm, const Launch& how) {
  const KnownType k = known_type(datatype);
  Outcome outcome = Outcome::NotTaken;
  int err = kSuccess;
  if (count >= 0 && k.size > 0) {
    const size_t bytes = size_t(count) * size_t(k.size);
    const auto resident = resident_call(hpcolls::ResidentKind::Bcast, buf, buf, bytes, DType::U8, Op::Sum, root);
    const bool root_ok = root >= 0 && root < comm_size(comm);
    outcome = run_native(comm, locate(buf).device, how, [&](hpcolls::NativeComm& nc, uintptr_t stream) {
      return nc.bcast(uintptr_t(buf), bytes, root, stream);
    }, &err, root_ok ? &resident : nullptr);
  } else if (how.enqueue) {
    return comm_error(comm, error_code("enqueue: Bcast of a type the kernels do not carry"));
  }
  if (outcome == Outcome::Failed) return comm_error(comm, err);
  if (outcome == Outcome::Done) return kSuccess;
  static const auto pmpi = next<int (*)(void*, int, Handle, int, Handle)>("PMPI_Bcast");
  CallStaging staging("MPI_Bcast");
  void* b = nullptr;
  err = staging.typed(buf, count, datatype, Access::write, &b);
  if (err != kSuccess) return comm_error(comm, err);
  return staging.finish(pmpi(b, count, datatype, root, comm));
}

int device_reduce(const void* send, void* recv, int count, Handle datatype, Handle op, int root, Handle comm,
                  const Launch& how) {
  DType t;
  Op o;
  Outcome outcome = Outcome::NotTaken;
  int err = kSuccess;
  const bool at_root = comm_rank(comm) == root;
  if (count >= 0 && reduction(datatype, op, &t, &o)) {
    const void* s = in_place(send) ? recv : send;
    const auto resident = resident_call(hpcolls::ResidentKind::Reduce, s, at_root ? recv : nullptr,
                                        size_t(count) * hpcolls::dtype_size(t), t, o, root);
    const bool root_ok = root >= 0 && root < comm_size(comm);
    outcome = run_native(comm, locate(s).device, how, [&](hpcolls::NativeComm& nc, uintptr_t stream) {
      return nc.reduce(uintptr_t(s), uintptr_t(at_root ? recv : nullptr), size_t(count), t, o, root, stream);
    }, &err, root_ok ? &resident : nullptr);
  } else if (how.enqueue) {
    return comm_error(comm, error_code("enqueue: Reduce of a type or op the kernels do not carry"));
  }
  if (outcome == Outcome::Failed) return comm_error(comm, err);
  if (outcome == Outcome::Done) return kSuccess;
  static const auto pmpi = next<int (*)(const void*, void*, int, Handle, Handle, int, Handle)>("PMPI_Reduce");
  CallStaging staging("MPI_Reduce");
  void *sb = const_cast<void*>(send), *rb = recv;
  if (!in_place(send)) err = staging.typed(send, count, datatype, Access::read, &sb);
  if (err == kSuccess && at_root) err = staging.typed(recv, count, datatype, Access::write, &rb);
  if (err != kSuccess) return comm_error(comm, err);
  return staging.finish(pmpi(sb, rb, count, datatype, op, root, comm));
}

int device_allgather(const void* send, int send_count, Handle send_type, void* recv, int recv_count,
                     Handle recv_type, Handle comm, const Launch& how) {
  const KnownType rk = known_type(recv_type);
  const bool inplace = in_place(send);
  const KnownType sk = inplace ? rk : known_type(send_type);
  const int n = comm_size(comm);
  Outcome outcome = Outcome::NotTaken;
  int err = kSuccess;
  const size_t bytes = size_t(recv_count) * size_t(rk.size);
  if (recv_count >= 0 && rk.size > 0 && sk.size > 0 && (inplace || size_t(send_count) * size_t(sk.size) == bytes)) {
    const void* s = inplace ? static_cast<const char*>(recv) + size_t(comm_rank(comm)) * bytes : send;
    const auto resident = resident_call(hpcolls::ResidentKind::Allgather, s, recv, bytes);
    outcome = run_native(comm, locate(recv).device, how, [&](hpcolls::NativeComm& nc, uintptr_t stream) {
      return nc.allgather(uintptr_t(s), uintptr_t(recv), bytes, 0, stream);
    }, &err, &resident);
  } else if (how.enqueue) {
    return comm_error(comm, error_code("enqueue: Allgather of types the kernels do not carry"));
  }
  if (outcome == Outcome::Failed) return comm_error(comm, err);
  if (outcome == Outcome::Done) return kSuccess;
  static const auto pmpi = next<int (*)(const void*, int, Handle, void*, int, Handle, Handle)>("PMPI_Allgather");
  CallStaging staging("MPI_Allgather");
  void *sb = const_cast<void*>(send), *rb = nullptr;
  if (!inplace) err = staging.typed(send, send_count, send_type, Access::read, &sb);
  if (err == kSuccess) err = staging.typed(recv, (long long)recv_count * n, recv_type, Access::write, &rb);
  if (err != kSuccess) return comm_error(comm, err);
  return staging.finish(pmpi(sb, send_count, send_type, rb, recv_count, recv_type, comm));
}

int device_reduce_scatter(const void* send, void* recv, const int* recv_counts, Handle datatype, Handle op,
                          Handle comm, const Launch& how) {
  const int n = comm_size(comm);
  long long total = 0;
  bool counts_ok = recv_counts != nullptr && n > 0;
  std::vector<size_t> counts;
  for (int q = 0; counts_ok && q < n; ++q) {
    counts_ok = recv_counts[q] >= 0;
    counts.push_back(size_t(recv_counts[q]));
    total += recv_counts[q];
  }
  DType t;
  Op o;
  Outcome outcome = Outcome::NotTaken;
  int err = kSuccess;
  if (counts_ok && reduction(datatype, op, &t, &o)) {
    const void* s = in_place(send) ? recv : send;
    const int rank = comm_rank(comm);
    size_t before = 0;
    for (int q = 0; q < rank && q < n; ++q) before += counts[size_t(q)];
    auto resident = resident_call(hpcolls::ResidentKind::ReduceScatter, s, recv, size_t(total) * hpcolls::dtype_size(t), t, o);
    resident.slice_offset = before * hpcolls::dtype_size(t);
    resident.slice_bytes = rank >= 0 && rank < n ? counts[size_t(rank)] * hpcolls::dtype_size(t) : 0;
    outcome = run_native(comm, locate(recv).device, how, [&](hpcolls::NativeComm& nc, uintptr_t stream) {
      return nc.reduce_scatter(uintptr_t(s), uintptr_t(recv), counts, t, o, stream);
    }, &err, &resident);
  } else if (how.enqueue) {
    return comm_error(comm, error_code("enqueue: Reduce_scatter of a type or op the kernels do not carry"));
  }
  if (outcome == Outcome::Failed) return comm_error(comm, err);
  if (outcome == Outcome::Done) return kSuccess;
  static const auto pmpi = next<int (*)(const void*, void*, const int*, Handle, Handle, Handle)>("PMPI_Reduce_scatter");
  CallStaging staging("MPI_Reduce_scatter");
  const int rank = comm_rank(comm);
  void *sb = const_cast<void*>(send), *rb = nullptr;
  if (!in_place(send)) err = staging.typed(send, total, datatype, Access::read, &sb);
  const long long mine = in_place(send) ? total : (rank >= 0 && recv_counts != nullptr ? recv_counts[rank] : 0);
  if (err == kSuccess) err = staging.typed(recv, mine, datatype, Access::write, &rb);
  if (err != kSuccess) return comm_error(comm, err);
  return staging.finish(pmpi(sb, rb, recv_counts, datatype, op, comm));
}

int device_reduce_scatter_block(const void* send, void* recv, int recv_count, Handle datatype, Handle op,
                                Handle comm, const Launch& how) {
  const int n = comm_size(comm);
  DType t;
  Op o;
  Outcome outcome = Outcome::NotTaken;
  int err = kSuccess;
  if (recv_count >= 0 && n > 0 && reduction(datatype, op, &t, &o)) {
    const void* s = in_place(send) ? recv : send;
    const std::vector<size_t> counts(static_cast<size_t>(n), static_cast<size_t>(recv_count));
    const size_t block = size_t(recv_count) * hpcolls::dtype_size(t);
    auto resident = resident_call(hpcolls::ResidentKind::ReduceScatter, s, recv, block * size_t(n), t, o);
    resident.slice_offset = block * size_t(comm_rank(comm));
    resident.slice_bytes = block;
    outcome = run_native(comm, locate(recv).device, how, [&](hpcolls::NativeComm& nc, uintptr_t stream) {
      return nc.reduce_scatter(uintptr_t(s), uintptr_t(recv), counts, t, o, stream);
    }, &err, &resident);
  } else if (how.enqueue) {
    return comm_error(comm, error_code("enqueue: Reduce_scatter_block of a type or op the kernels do not carry"));
  }
  if (outcome == Outcome::Failed) return comm_error(comm, err);
  if (outcome == Outcome::Done) return kSuccess;
  static const auto pmpi =
      next<int (*)(const void*, void*, int, Handle, Handle, Handle)>("PMPI_Reduce_scatter_block");
  CallStaging staging("MPI_Reduce_scatter_block");
  void *sb = const_cast<void*>(send), *rb = nullptr;
  if (!in_place(send)) err = staging.typed(send, (long long)recv_count * n, datatype, Access::read, &sb);
  const long long mine = in_place(send) ? (long long)recv_count * n : recv_count;
  if (err == kSuccess) err = staging.typed(recv, mine, datatype, Access::write, &rb);
  if (err != kSuccess) return comm_error(comm, err);
  return staging.finish(pmpi(sb, rb, recv_count, datatype, op, comm));
}

}  // namespace hpcolls_pmpi
