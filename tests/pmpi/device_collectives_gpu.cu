// The PMPI library on device buffers, from C++ (run with the library preloaded, N ranks on one GPU
// under MPS: tests/gpu_steps/pmpi.steps). Skips, saying why, without a GPU or without the library.
//   A. every collective it takes, for every predefined type and op MPI defines for it, every root,
//      in place and not, odd counts: device results bitwise equal to MPI's on host copies;
//   B. random mixed stress (collective, type, op, count, root) against the host reference;
//   C. communicators duplicated and freed in a loop, a device collective on each;
//   D. a rank skipping a call: an MPI error through the communicator's error handler on every rank;
//   E. the enqueue API captured into a CUDA graph, replayed >= 1000 times;
//   F. the calls the library stages through host memory on an MPI that is not CUDA-aware
//      (point-to-point, nonblocking with their completion calls, Gather(v), Scatter(v), Allgatherv,
//      Alltoall(v), Scan, Exscan): device results bitwise equal to the same calls on host buffers;
//   G. what the resident kernel (HPCOLLS_PMPI_RESIDENT_US) must survive: calls further apart than its
//      idle life (it leaves and is launched again), a blocking call right behind enqueued ones, and a
//      device-wide synchronize after a call (it returns once the kernel leaves). Run with and without
//      the setting (A-E and D then take it too, for every call that fits it).
// Values are small integers (floats too), so that every order of reduction is exact and MPI's
// host result is the reference bit for bit. Random data, fresh each run; outputs poisoned.
//
//   nvcc -std=c++17 -O2 -Inative/include $(mpicxx --showme:compile) -o device_collectives_gpu \
//        tests/pmpi/device_collectives_gpu.cu $(mpicxx --showme:link) -ldl
//   LD_PRELOAD=$(python -m hpcolls preload) mpiexec -n 2 ./device_collectives_gpu [stress_calls]
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hpcolls/pmpi.h"

namespace {

int rank_ = 0, size_ = 1, failures = 0;
std::mt19937_64 rng;

#define CUDA(call)                                                                                     \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) {                                                                           \
      std::fprintf(stderr, "rank %d: %s failed: %s\n", rank_, #call, cudaGetErrorString(e_));         \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                                    \
    }                                                                                                  \
  } while (0)

std::map<std::string, int> failed_kinds;  // failures by collective, type and op (the first four words)

void fail(const std::string& what) {
  ++failures;
  if (failures < 20) std::fprintf(stderr, "rank %d: FAIL %s\n", rank_, what.c_str());
  size_t end = 0;
  for (int words = 0; words < 4 && end != std::string::npos; ++words) end = what.find(' ', end + (words > 0));
  ++failed_kinds[what.substr(0, end)];
}

struct Type {
  MPI_Datatype t;
  int size;
  const char* name;
  enum { Float, Complex, Int, Bool } kind;
};
const std::vector<Type>& types() {
  static const std::vector<Type> all = {
      {MPI_FLOAT, 4, "float", Type::Float},        {MPI_DOUBLE, 8, "double", Type::Float},
      {MPI_C_FLOAT_COMPLEX, 8, "c_float_complex", Type::Complex},
      {MPI_C_DOUBLE_COMPLEX, 16, "c_double_complex", Type::Complex},
      {MPI_INT, 4, "int", Type::Int},              {MPI_UNSIGNED, 4, "unsigned", Type::Int},
      {MPI_LONG, 8, "long", Type::Int},            {MPI_UNSIGNED_LONG, 8, "unsigned_long", Type::Int},
      {MPI_LONG_LONG, 8, "long_long", Type::Int},  {MPI_UNSIGNED_LONG_LONG, 8, "unsigned_long_long", Type::Int},
      {MPI_SHORT, 2, "short", Type::Int},          {MPI_UNSIGNED_SHORT, 2, "unsigned_short", Type::Int},
      {MPI_SIGNED_CHAR, 1, "signed_char", Type::Int}, {MPI_UNSIGNED_CHAR, 1, "unsigned_char", Type::Int},
      {MPI_INT8_T, 1, "int8", Type::Int},          {MPI_INT16_T, 2, "int16", Type::Int},
      {MPI_INT32_T, 4, "int32", Type::Int},        {MPI_INT64_T, 8, "int64", Type::Int},
      {MPI_UINT8_T, 1, "uint8", Type::Int},        {MPI_UINT16_T, 2, "uint16", Type::Int},
      {MPI_UINT32_T, 4, "uint32", Type::Int},      {MPI_UINT64_T, 8, "uint64", Type::Int},
      {MPI_C_BOOL, 1, "c_bool", Type::Bool},
  };
  return all;
}
struct OpName {
  MPI_Op op;
  const char* name;
};
const OpName kOps[] = {{MPI_SUM, "sum"},   {MPI_PROD, "prod"}, {MPI_MIN, "min"},   {MPI_MAX, "max"},
                       {MPI_BAND, "band"}, {MPI_BOR, "bor"},   {MPI_BXOR, "bxor"}, {MPI_LAND, "land"},
                       {MPI_LOR, "lor"},   {MPI_LXOR, "lxor"}};
const char* op_name(MPI_Op op) {
  for (const OpName& o : kOps)
    if (o.op == op) return o.name;
  return "?";
}
bool defined(const Type& t, MPI_Op op) {  // MPI's table of ops per type group
  if (t.kind == Type::Float) return op == MPI_SUM || op == MPI_PROD || op == MPI_MIN || op == MPI_MAX;
  if (t.kind == Type::Complex) return op == MPI_SUM || op == MPI_PROD;
  if (t.kind == Type::Bool) return op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
  return true;
}

// Small values: products of up to 8 ranks (|z| <= 3) and sums stay exact and in range for every type.
void fill(std::vector<unsigned char>& b, const Type& t, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  const size_t n = b.size() / t.size;
  for (size_t i = 0; i < n; ++i) {
    const int v = int(g() % 3);  // 0, 1, 2
    unsigned char* p = b.data() + i * t.size;
    switch (t.kind) {
      case Type::Float:
        if (t.size == 4) { float f = float(v) - 1.0f; std::memcpy(p, &f, 4); }
        else { double d = double(v) - 1.0; std::memcpy(p, &d, 8); }
        break;
      case Type::Complex:  // small integer parts: every product exact (see same())
        if (t.size == 8) { float f[2] = {float(1 + v), float(2 - v)}; std::memcpy(p, f, 8); }
        else { double d[2] = {double(1 + v), double(2 - v)}; std::memcpy(p, d, 16); }
        break;
      case Type::Bool: p[0] = v & 1; break;
      case Type::Int: { std::uint64_t u = std::uint64_t(v); std::memcpy(p, &u, t.size); break; }  // little-endian
    }
  }
}

// Results compare bit for bit, but for complex PROD: there a zero part's sign depends on the
// order the factors are multiplied in ((a+bi)(c+di) = (ac-bd) + (ad+bc)i sums products of mixed
// signs), which MPI leaves to the implementation; the kernels multiply in rank order and Open
// MPI's tree otherwise, so the two may give +0 and -0. The parts are small integers (fill), so
// comparing them as values still catches any wrong product.
template <typename Real>
bool same_values(const unsigned char* a, const unsigned char* b, size_t bytes) {
  for (size_t i = 0; i < bytes / sizeof(Real); ++i) {
    Real x, y;
    std::memcpy(&x, a + i * sizeof(Real), sizeof(Real));
    std::memcpy(&y, b + i * sizeof(Real), sizeof(Real));
    if (!(x == y)) return false;
  }
  return true;
}
bool same(const unsigned char* got, const unsigned char* want, size_t bytes, const Type& t, MPI_Op op) {
  if (t.kind != Type::Complex || op != MPI_PROD) return std::memcmp(got, want, bytes) == 0;
  return t.size == 8 ? same_values<float>(got, want, bytes) : same_values<double>(got, want, bytes);
}

enum Coll { Allreduce, Bcast, Reduce, Allgather, ReduceScatterBlock, ReduceScatter, kColls };
const char* kCollNames[] = {"Allreduce", "Bcast", "Reduce", "Allgather", "Reduce_scatter_block", "Reduce_scatter"};

// One call on host buffers (the reference: MPI itself) and on device buffers (the library);
// compares the receive buffers bitwise. Returns false on a mismatch.
bool one(MPI_Comm comm, Coll c, const Type& t, MPI_Op op, int count, int root, bool in_place, std::uint64_t seed) {
  const size_t n = size_t(size_);
  size_t send_elems = count, recv_elems = count;
  if (c == Allgather) recv_elems = count * n;
  if (c == ReduceScatterBlock || c == ReduceScatter) send_elems = count * n, recv_elems = in_place ? count * n : count;
  if (c == Bcast) send_elems = 0;
  std::vector<unsigned char> send(send_elems * t.size + 1), recv(recv_elems * t.size + 1), got(recv.size());
  fill(send, t, seed + rank_);
  fill(recv, t, seed + 1000 + rank_);  // poison (or the in-place input / the broadcast root's data)
  void *dsend = nullptr, *drecv = nullptr;
  CUDA(cudaMalloc(&dsend, send.size()));
  CUDA(cudaMalloc(&drecv, recv.size()));
  CUDA(cudaMemcpy(dsend, send.data(), send.size(), cudaMemcpyHostToDevice));
  CUDA(cudaMemcpy(drecv, recv.data(), recv.size(), cudaMemcpyHostToDevice));
  std::vector<int> counts(n, count);
  auto call = [&](void* s, void* r) {
    const void* sb = in_place ? MPI_IN_PLACE : s;
    switch (c) {
      case Allreduce: return MPI_Allreduce(sb, r, count, t.t, op, comm);
      case Bcast: return MPI_Bcast(r, count, t.t, root, comm);
      case Reduce: return MPI_Reduce(in_place && rank_ == root ? MPI_IN_PLACE : s, r, count, t.t, op, root, comm);
      case Allgather:
        return in_place ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, count, t.t, comm)
                        : MPI_Allgather(s, count, t.t, r, count, t.t, comm);
      case ReduceScatterBlock: return MPI_Reduce_scatter_block(sb, r, count, t.t, op, comm);
      default: return MPI_Reduce_scatter(sb, r, counts.data(), t.t, op, comm);
    }
  };
  if (c == Allgather && in_place) {  // the rank's own block is its input
    std::memcpy(recv.data() + rank_ * count * t.size, send.data(), count * t.size);
    CUDA(cudaMemcpy(static_cast<char*>(drecv) + rank_ * count * t.size, send.data(), count * t.size,
                    cudaMemcpyHostToDevice));
  }
  int e1 = call(send.data(), recv.data());
  int e2 = call(dsend, drecv);
  CUDA(cudaMemcpy(got.data(), drecv, got.size(), cudaMemcpyDeviceToHost));
  CUDA(cudaFree(dsend));
  CUDA(cudaFree(drecv));
  const bool compare = !(c == Reduce && rank_ != root);
  size_t bytes = recv_elems * t.size;
  if ((c == ReduceScatterBlock || c == ReduceScatter) && in_place) bytes = count * t.size;  // the result's part
  bool ok = e1 == MPI_SUCCESS && e2 == MPI_SUCCESS && (!compare || same(got.data(), recv.data(), bytes, t, op));
  if (!ok)
    fail(std::string(kCollNames[c]) + " " + t.name + " op " + op_name(op) + " count " + std::to_string(count) + " root " + std::to_string(root) + (in_place ? " in place" : "") +
         " errors " + std::to_string(e1) + "/" + std::to_string(e2));
  return ok;
}

bool reduces(Coll c) { return c == Allreduce || c == Reduce || c == ReduceScatterBlock || c == ReduceScatter; }

void part_a(std::uint64_t seed) {
  const int counts[] = {1, 3, 17, 257, 1000, 4099};
  for (int c = 0; c < kColls; ++c)
    for (const Type& t : types())
      for (const OpName& o : kOps) {
        if (reduces(Coll(c)) ? !defined(t, o.op) : o.op != MPI_SUM) continue;
        for (int count : counts)
          for (int ip = 0; ip < 2; ++ip) {
            if (c == Bcast && ip) continue;
            const int roots = (c == Bcast || c == Reduce) ? size_ : 1;
            for (int root = 0; root < roots; ++root) one(MPI_COMM_WORLD, Coll(c), t, o.op, count, root, ip, seed++);
          }
      }
}

void part_b(long calls, std::uint64_t seed) {
  std::mt19937_64 g(seed);  // the same on every rank: every rank draws the same call
  for (long i = 0; i < calls; ++i) {
    const Coll c = Coll(g() % kColls);
    const Type& t = types()[g() % types().size()];
    const OpName& o = kOps[g() % 10];
    if (reduces(c) && !defined(t, o.op)) continue;
    const int count = 1 + int(g() % (g() % 4 == 0 ? 8192 / t.size : 64));
    one(MPI_COMM_WORLD, c, t, o.op, count, int(g() % size_), (g() % 4 == 0) && c != Bcast, seed + i);
  }
}

void part_c(int loops) {
  for (int i = 0; i < loops; ++i) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    one(dup, Allreduce, types()[1], MPI_SUM, 1 + i % 97, 0, false, 7u * i);
    MPI_Comm_free(&dup);
  }
}

void part_d() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  double *x = nullptr, *y = nullptr;
  CUDA(cudaMalloc(&x, 64));
  CUDA(cudaMalloc(&y, 64));
  CUDA(cudaMemset(x, 0, 64));
  MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, comm);  // set up, every rank
  // The last rank skips one call. Its peers' kernels then wait for it and give up (an error); only
  // then (a host barrier) does the skipping rank go on: its next call still finds its peers' data
  // of the call it skipped and completes, and the one after waits for peers whose communicator is
  // broken (an error). Had it gone on at once, its next call would have met its peers' and all
  // would have completed. So every rank makes calls until one fails, at most four: each must see
  // an error.
  const bool skipper = size_ > 1 && rank_ == size_ - 1;
  auto calls_until_error = [&](int first) {
    int errors = 0;
    for (int call = first; call < 4 && errors == 0; ++call)
      errors += MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS;
    return errors;
  };
  int errors = skipper ? 0 : calls_until_error(0);
  MPI_Barrier(MPI_COMM_WORLD);
  if (skipper) errors = calls_until_error(1);
  int all = 0, expect = size_ > 1 ? size_ : 0;
  int saw = errors > 0;
  MPI_Allreduce(&saw, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (all != expect) fail("skipped call: " + std::to_string(all) + " of " + std::to_string(size_) + " ranks saw an MPI error");
  CUDA(cudaFree(x));
  CUDA(cudaFree(y));
  MPI_Comm_free(&comm);
}

__global__ void add_one(long long* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}

void part_e(int replays) {
  const int n = 33;
  long long *x, *y, *b, *g, *rs;
  CUDA(cudaMalloc(&x, n * 8));
  CUDA(cudaMalloc(&y, n * 8));
  CUDA(cudaMalloc(&b, n * 8));
  CUDA(cudaMalloc(&g, n * 8 * size_));
  CUDA(cudaMalloc(&rs, n * 8));
  std::vector<long long> x0(n);
  for (int i = 0; i < n; ++i) x0[i] = (rank_ + 1) * 10 + i;
  CUDA(cudaMemcpy(x, x0.data(), n * 8, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // The first device call sets the communicator up (collective, not capturable). Its error
  // returned, not fatal, so that the reason (no native path, and why) is printed.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int first = hpcolls_allreduce_enqueue(x, y, n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, s);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  if (first != MPI_SUCCESS) {
    char why[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(first, why, &length);
    fail(std::string("enqueue: the first call failed: ") + why);
    return;
  }
  CUDA(cudaStreamSynchronize(s));
  cudaGraph_t graph;
  CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  add_one<<<1, 64, 0, s>>>(x, n);
  int e = hpcolls_allreduce_enqueue(x, y, n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, s);
  e |= hpcolls_bcast_enqueue(x, n, MPI_LONG_LONG, size_ - 1, MPI_COMM_WORLD, s);  // x := last rank's x
  e |= hpcolls_allgather_enqueue(y, n, MPI_LONG_LONG, g, n, MPI_LONG_LONG, MPI_COMM_WORLD, s);
  e |= hpcolls_reduce_enqueue(x, b, n, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD, s);
  e |= hpcolls_reduce_scatter_block_enqueue(g, rs, n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, s);
  std::vector<int> counts(size_, n);
  e |= hpcolls_reduce_scatter_enqueue(g, rs, counts.data(), MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, s);
  CUDA(cudaStreamEndCapture(s, &graph));
  if (e != MPI_SUCCESS) fail("enqueue: a captured call failed");
  cudaGraphExec_t exec;
  CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < replays; ++r) CUDA(cudaGraphLaunch(exec, s));
  CUDA(cudaStreamSynchronize(s));
  // Replay k: every x = last x of replay k-1 plus one, starting from x0 of the last rank, so after
  // R replays x = x0_last + R everywhere and y (replay R's allreduce of x before the bcast) = x0
  // summed over ranks + R * size at replay 1, and at R > 1 size * (x0_last + R).
  std::vector<long long> hx(n), hy(n), hrs(n);
  CUDA(cudaMemcpy(hx.data(), x, n * 8, cudaMemcpyDeviceToHost));
  CUDA(cudaMemcpy(hy.data(), y, n * 8, cudaMemcpyDeviceToHost));
  CUDA(cudaMemcpy(hrs.data(), rs, n * 8, cudaMemcpyDeviceToHost));
  bool ok = true;
  for (int i = 0; i < n; ++i) {
    const long long last = size_ * 10 + i;
    ok &= hx[i] == last + replays;
    ok &= hy[i] == (long long)size_ * (last + replays);
    ok &= hrs[i] == (long long)size_ * size_ * (last + replays);  // every rank's block of g is y
  }
  if (!ok) fail("enqueue: the graph's results after " + std::to_string(replays) + " replays");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  for (void* p : {(void*)x, (void*)y, (void*)b, (void*)g, (void*)rs}) cudaFree(p);
}

// F: one staged call run on host buffers, then on device buffers holding the same bytes (the
// receive buffer poisoned alike); the device result must equal the host one bit for bit.
using StagedRun = void (*)(const double* send, double* recv, int count, int variant);
void staged_one(const char* name, StagedRun run, size_t send_elems, size_t recv_elems, int count, int variant,
                std::uint64_t seed) {
  std::mt19937_64 g(seed + std::uint64_t(rank_) * 7919u);
  std::vector<double> hs(send_elems + 1), hr(recv_elems + 1), got(recv_elems + 1);
  for (double& v : hs) v = double(int(g() % 15) - 7);
  for (double& v : hr) v = -1e300 * double(1 + g() % 3);  // poison
  double *ds = nullptr, *dr = nullptr;
  CUDA(cudaMalloc(&ds, hs.size() * sizeof(double)));
  CUDA(cudaMalloc(&dr, hr.size() * sizeof(double)));
  CUDA(cudaMemcpy(ds, hs.data(), hs.size() * sizeof(double), cudaMemcpyHostToDevice));
  CUDA(cudaMemcpy(dr, hr.data(), hr.size() * sizeof(double), cudaMemcpyHostToDevice));
  run(hs.data(), hr.data(), count, variant);
  run(ds, dr, count, variant);
  CUDA(cudaMemcpy(got.data(), dr, got.size() * sizeof(double), cudaMemcpyDeviceToHost));
  if (std::memcmp(got.data(), hr.data(), hr.size() * sizeof(double)) != 0)
    fail(std::string("staged ") + name + " count " + std::to_string(count) + " variant " + std::to_string(variant) +
         ": device result differs from the host one");
  CUDA(cudaFree(ds));
  CUDA(cudaFree(dr));
}
int ring_left() { return (rank_ + size_ - 1) % size_; }
int ring_right() { return (rank_ + 1) % size_; }
void staged_p2p(const double* s, double* r, int count, int variant) {
  if (variant == 0 || size_ == 1) {
    MPI_Sendrecv(s, count, MPI_DOUBLE, ring_right(), 1, r, count, MPI_DOUBLE, ring_left(), 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    return;
  }
  if (rank_ % 2 == 0) MPI_Send(s, count, MPI_DOUBLE, ring_right(), 2, MPI_COMM_WORLD);
  MPI_Recv(r, count, MPI_DOUBLE, ring_left(), 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rank_ % 2 == 1) MPI_Send(s, count, MPI_DOUBLE, ring_right(), 2, MPI_COMM_WORLD);
}
void staged_nonblocking(const double* s, double* r, int count, int variant) {
  MPI_Request req[2];
  MPI_Irecv(r, count, MPI_DOUBLE, ring_left(), 3, MPI_COMM_WORLD, &req[0]);
  MPI_Isend(s, count, MPI_DOUBLE, ring_right(), 3, MPI_COMM_WORLD, &req[1]);
  int flag = 0, index = 0, done = 0;
  if (variant == 0) MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  else if (variant == 1) while (done < 2) { MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE); ++done; }
  else do MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE); while (!flag);
}
void staged_gatherv(const double* s, double* r, int count, int root) {
  std::vector<int> counts(size_), displs(size_);
  for (int q = 0; q < size_; ++q) { counts[q] = count + q % 2; displs[q] = q * (count + 3); }
  MPI_Gatherv(s, counts[rank_], MPI_DOUBLE, r, counts.data(), displs.data(), MPI_DOUBLE, root, MPI_COMM_WORLD);
}
void staged_scatter(const double* s, double* r, int count, int root) {
  MPI_Scatter(s, count, MPI_DOUBLE, r, count, MPI_DOUBLE, root, MPI_COMM_WORLD);
}
void staged_allgatherv(const double* s, double* r, int count, int) {
  std::vector<int> counts(size_), displs(size_);
  for (int q = 0; q < size_; ++q) { counts[q] = count + q % 2; displs[q] = q * (count + 3); }
  MPI_Allgatherv(s, counts[rank_], MPI_DOUBLE, r, counts.data(), displs.data(), MPI_DOUBLE, MPI_COMM_WORLD);
}
void staged_alltoall(const double* s, double* r, int count, int) {
  MPI_Alltoall(s, count, MPI_DOUBLE, r, count, MPI_DOUBLE, MPI_COMM_WORLD);
}
void staged_scan(const double* s, double* r, int count, int exclusive) {
  (exclusive ? MPI_Exscan : MPI_Scan)(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

void part_f(std::uint64_t seed) {
  const size_t n = size_t(size_);
  for (int count : {1, 17, 4099}) {
    const size_t c = size_t(count), vec = n * (c + 3);
    for (int v = 0; v < 2; ++v) staged_one("point-to-point", staged_p2p, c, c, count, v, seed++);
    for (int v = 0; v < 3; ++v) staged_one("nonblocking", staged_nonblocking, c, c, count, v, seed++);
    for (int root = 0; root < size_; ++root) {
      staged_one("Gatherv", staged_gatherv, c + 1, vec, count, root, seed++);
      staged_one("Scatter", staged_scatter, c * n, c, count, root, seed++);
    }
    staged_one("Allgatherv", staged_allgatherv, c + 1, vec, count, 0, seed++);
    staged_one("Alltoall", staged_alltoall, c * n, c * n, count, 0, seed++);
    for (int ex = 0; ex < 2; ++ex) staged_one(ex ? "Exscan" : "Scan", staged_scan, c, c, count, ex, seed++);
  }
}


void part_g(std::uint64_t seed) {
  const char* setting = std::getenv("HPCOLLS_PMPI_RESIDENT_US");
  const long idle_us = setting != nullptr ? std::atol(setting) : 0;
  std::mt19937_64 g(seed + std::uint64_t(rank_));
  const int n = 5;  // odd, 40 bytes
  long long *x, *y, *x2, *z;
  for (long long** p : {&x, &y, &x2, &z}) CUDA(cudaMalloc(p, n * 8));
  std::vector<long long> h(n), r(n);
  const long long ranks_sum = 100ll * size_ * (size_ - 1) / 2;  // sum of 100 * rank
  for (int i = 0; i < 40; ++i) {  // gaps of 0, half and twice the idle life, at random on each rank
    for (int k = 0; k < n; ++k) h[k] = 100ll * rank_ + i + k;
    CUDA(cudaMemcpy(x, h.data(), n * 8, cudaMemcpyHostToDevice));
    CUDA(cudaMemset(y, 0xff, n * 8));
    MPI_Allreduce(x, y, n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    CUDA(cudaMemcpy(r.data(), y, n * 8, cudaMemcpyDeviceToHost));
    for (int k = 0; k < n; ++k)
      if (r[k] != ranks_sum + (long long)size_ * (i + k)) { fail("resident: a call after a gap, call " + std::to_string(i)); break; }
    const long gap_us = std::array<long, 3>{0, idle_us / 2, 2 * idle_us}[g() % 3];
    std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
  }
  cudaStream_t s;
  CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < 50; ++i) {  // enqueued, then blocking on other buffers: the blocking one comes second
    for (int k = 0; k < n; ++k) h[k] = 100ll * rank_ + i + k;
    CUDA(cudaMemcpy(x, h.data(), n * 8, cudaMemcpyHostToDevice));
    for (int k = 0; k < n; ++k) h[k] = 100ll * rank_ + 2 * i + k;
    CUDA(cudaMemcpy(x2, h.data(), n * 8, cudaMemcpyHostToDevice));
    int e = hpcolls_allreduce_enqueue(x, y, n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, s);
    e |= hpcolls_bcast_enqueue(y, n, MPI_LONG_LONG, i % size_, MPI_COMM_WORLD, s);
    MPI_Allreduce(x2, z, n, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    CUDA(cudaStreamSynchronize(s));
    if (e != MPI_SUCCESS) fail("resident: an enqueued call failed");
    CUDA(cudaMemcpy(r.data(), y, n * 8, cudaMemcpyDeviceToHost));
    for (int k = 0; k < n; ++k)
      if (r[k] != ranks_sum + (long long)size_ * (i + k)) { fail("resident: the enqueued call before a blocking one"); break; }
    CUDA(cudaMemcpy(r.data(), z, n * 8, cudaMemcpyDeviceToHost));
    for (int k = 0; k < n; ++k)
      if (r[k] != 100ll * (size_ - 1) + 2 * i + k) { fail("resident: a blocking call behind enqueued ones"); break; }
  }
  MPI_Allreduce(x, y, n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  CUDA(cudaDeviceSynchronize());  // waits for the resident kernel to leave: its idle life, not for ever
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (waited > double(idle_us) * 1e-6 + 1.0)
    fail("resident: cudaDeviceSynchronize after a call took " + std::to_string(waited) + " s");
  cudaStreamDestroy(s);
  for (void* p : {(void*)x, (void*)y, (void*)x2, (void*)z}) cudaFree(p);
}

}  // namespace

int main(int argc, char** argv) {
  setenv("HPCOLLS_TIMEOUT", "3", 0);  // part D waits this long for the missing rank
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (rank_ == 0) std::printf("SKIP: no CUDA device here (the device-buffer tests need a GPU)\n");
    MPI_Finalize();
    return 0;
  }
  if (dlsym(RTLD_DEFAULT, "hpcolls_pmpi_staging_active") == nullptr) {
    if (rank_ == 0) std::printf("SKIP: the PMPI library is not loaded (LD_PRELOAD=$(python -m hpcolls preload))\n");
    MPI_Finalize();
    return 0;
  }
  CUDA(cudaSetDevice(rank_ % devices));
  const long stress = argc > 1 ? std::atol(argv[1]) : 100000;
  std::uint64_t seed = std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  const char* parts = std::getenv("PMPI_PARTS");
  auto want = [&](char p) { return parts == nullptr || std::strchr(parts, p) != nullptr; };
  if (want('A')) part_a(seed);
  if (want('B')) part_b(stress, seed + 1);
  if (want('C')) part_c(200);
  if (want('E')) part_e(1000);
  if (want('F')) part_f(seed + 2);
  if (want('G')) part_g(seed + 3);
  if (want('D')) part_d();  // last: it leaves a broken communicator behind (freed)
  int all = 0;
  for (const auto& [kind, n] : failed_kinds) std::fprintf(stderr, "rank %d: %d failures of %s\n", rank_, n, kind.c_str());
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ == 0) std::printf("%s: %d failures at %d ranks (stress %ld calls)\n", all ? "FAIL" : "ok", all, size_, stress);
  MPI_Finalize();
  return all ? 1 : 0;
}
