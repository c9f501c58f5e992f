/* The six collectives the PMPI library takes, and the calls it stages (point-to-point, nonblocking
 * point-to-point with every completion call, the other collectives; then every collective again in its
 * nonblocking form, MPI_Iallreduce & co.), on host buffers and (where the library is loaded) on
 * pretend device memory (hpcolls_pmpi_staging_pretend_device: a range mapped with no access, so
 * that MPI touching it would crash as on a device pointer, counted as device memory by the
 * library, which must stage it through host memory on a CPU machine). Prints one digest line of
 * every host result: run.sh runs this with and without the library and requires the same digest
 * (every call bitwise as without it); the pretend-device results must equal the host ones bitwise.
 * Random data, fresh each run (seeded from the time, the same on every rank), outputs poisoned.
 *
 *   mpicc -O2 -o collectives_cpu collectives_cpu.c -ldl && mpiexec -n 2 ./collectives_cpu
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static int rank, size;
static uint64_t digest = 1469598103934665603ull;
static void (*pretend)(void*, size_t);
static char* dev;  /* the pretend device range */
static const size_t dev_bytes = 1 << 20;
static int failures;
/* immediate: every collective below in its nonblocking form (MPI_Iallreduce, ...), waited for at
 * once: the same results, through the library's nonblocking entry points. */
static int immediate;
static MPI_Request request_;
static int waited(int err) { return err == MPI_SUCCESS ? MPI_Wait(&request_, MPI_STATUS_IGNORE) : err; }
#define COLL(blocking, nonblocking, ...) \
  (immediate ? waited(nonblocking(__VA_ARGS__, &request_)) : blocking(__VA_ARGS__))

static void mix(const void* p, size_t n) {
  const unsigned char* b = p;
  for (size_t i = 0; i < n; ++i) digest = (digest ^ b[i]) * 1099511628211ull;
}
static void open_dev(int on) { mprotect(dev, dev_bytes, on ? PROT_READ | PROT_WRITE : PROT_NONE); }
static void fill(void* p, size_t n, unsigned seed) {
  unsigned char* b = p;
  for (size_t i = 0; i < n; ++i) { seed = seed * 1103515245u + 12345u; b[i] = (unsigned char)(seed >> 16); }
}
/* Random values that every type's arithmetic keeps exact enough to compare bitwise: small
 * integers for the integer types, floats with few mantissa bits (sums in any order are exact). */
static void fill_typed(void* p, int count, MPI_Datatype t, unsigned seed) {
  for (int i = 0; i < count; ++i) {
    seed = seed * 1103515245u + 12345u;
    int v = (int)((seed >> 16) % 7) - 3;
    if (t == MPI_FLOAT) ((float*)p)[i] = (float)v * 0.5f;
    else if (t == MPI_DOUBLE) ((double*)p)[i] = (double)v * 0.25;
    else if (t == MPI_INT) ((int*)p)[i] = v;
    else if (t == MPI_LONG_LONG) ((long long*)p)[i] = (long long)v << 20;
    else if (t == MPI_UNSIGNED) ((unsigned*)p)[i] = (unsigned)(v + 3);
    /* complex: both parts positive, so that every zero a product makes is +0 (a zero from
     * mixed signs is -0 or +0 by the order of the products, and the nonblocking forms' order is
     * not the blocking ones') */
    else if (t == MPI_C_DOUBLE_COMPLEX) { ((double*)p)[2 * i] = 1 + (v + 3) % 3; ((double*)p)[2 * i + 1] = 1 + (v + 4) % 3; }
  }
}
static void check(int ok, const char* what) {
  if (!ok) { ++failures; fprintf(stderr, "rank %d: FAIL %s\n", rank, what); }
}

/* One collective on host buffers, then the same on pretend device buffers; compares them. */
typedef void (*Run)(void* send, void* recv, int count, MPI_Datatype t, MPI_Op op, int root, int in_place);
static void both(const char* name, Run run, int count, MPI_Datatype t, int tsize, MPI_Op op, int root, int in_place,
                 size_t send_elems, size_t recv_elems, unsigned seed) {
  size_t sb = send_elems * tsize, rb = recv_elems * tsize;
  char* hs = malloc(sb + 1); char* hr = malloc(rb + 1);
  fill_typed(hs, (int)send_elems, t, seed + rank);
  fill(hr, rb, seed ^ 0x5a5a);  /* poisoned */
  if (in_place) fill_typed(hr, (int)recv_elems, t, seed + rank);
  run(hs, hr, count, t, op, root, in_place);
  mix(hr, rb);
  if (pretend && sb + rb <= dev_bytes) {
    open_dev(1);
    char* ds = dev; char* dr = dev + ((sb + 63) & ~(size_t)63);
    fill_typed(ds, (int)send_elems, t, seed + rank);
    fill(dr, rb, seed ^ 0x5a5a);
    if (in_place) fill_typed(dr, (int)recv_elems, t, seed + rank);
    char* expect = malloc(rb + 1);
    open_dev(0);
    run(ds, dr, count, t, op, root, in_place);
    open_dev(1);
    memcpy(expect, dr, rb);
    open_dev(0);
    char what[320];
    char type_name[MPI_MAX_OBJECT_NAME] = "";
    int length = 0;
    MPI_Type_get_name(t, type_name, &length);
    const char* op_name = op == MPI_SUM ? "SUM" : op == MPI_MAX ? "MAX" : op == MPI_MIN ? "MIN" : op == MPI_PROD ? "PROD" : "";
    snprintf(what, sizeof what, "%s%s %s %s count %d root %d in_place %d: staged result differs from host result",
             immediate ? "nonblocking " : "", name, type_name, op_name, count, root, in_place);
    check(memcmp(expect, hr, rb) == 0, what);
    free(expect);
  }
  free(hs); free(hr);
}

static void run_allreduce(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)root; COLL(MPI_Allreduce, MPI_Iallreduce, ip ? MPI_IN_PLACE : s, r, count, t, op, MPI_COMM_WORLD);
}
static void run_bcast(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)s; (void)op; (void)ip; COLL(MPI_Bcast, MPI_Ibcast, r, count, t, root, MPI_COMM_WORLD);
}
static void run_reduce(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  COLL(MPI_Reduce, MPI_Ireduce, ip && rank == root ? MPI_IN_PLACE : s, r, count, t, op, root, MPI_COMM_WORLD);
}
static void run_allgather(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)op; (void)root; (void)ip; COLL(MPI_Allgather, MPI_Iallgather, s, count, t, r, count, t, MPI_COMM_WORLD);
}
static void run_rsb(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)root; COLL(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, ip ? MPI_IN_PLACE : s, r, count, t, op, MPI_COMM_WORLD);
}
static void run_rs(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)root;
  int* counts = malloc(sizeof(int) * size);
  for (int q = 0; q < size; ++q) counts[q] = count;  /* equal blocks: in place keeps block 0 the largest */
  COLL(MPI_Reduce_scatter, MPI_Ireduce_scatter, ip ? MPI_IN_PLACE : s, r, counts, t, op, MPI_COMM_WORLD);
  free(counts);
}

/* The calls only staged (not taken by the kernels): every one bitwise as on host buffers. Blocks of
 * the vector forms have gaps (poisoned, which must come back untouched) and differ in size. */
static int* ints(int n) { return calloc((size_t)n + 1, sizeof(int)); }
static int left(void) { return (rank + size - 1) % size; }
static int right(void) { return (rank + 1) % size; }
static void run_gather(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)op; COLL(MPI_Gather, MPI_Igather, ip && rank == root ? MPI_IN_PLACE : s, count, t, r, count, t, root, MPI_COMM_WORLD);
}
static void vector_layout(int count, int* counts, int* displs) {  /* block q: count + q % 2 elements, then a gap */
  for (int q = 0; q < size; ++q) { counts[q] = count + q % 2; displs[q] = q * (count + 3); }
}
static void run_gatherv(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)op; (void)ip;
  int *counts = ints(size), *displs = ints(size);
  vector_layout(count, counts, displs);
  COLL(MPI_Gatherv, MPI_Igatherv, s, counts[rank], t, r, counts, displs, t, root, MPI_COMM_WORLD);
  free(counts); free(displs);
}
static void run_scatter(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)op; COLL(MPI_Scatter, MPI_Iscatter, s, count, t, ip && rank == root ? MPI_IN_PLACE : r, count, t, root, MPI_COMM_WORLD);
}
static void run_scatterv(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)op; (void)ip;
  int *counts = ints(size), *displs = ints(size);
  vector_layout(count, counts, displs);
  COLL(MPI_Scatterv, MPI_Iscatterv, s, counts, displs, t, r, counts[rank], t, root, MPI_COMM_WORLD);
  free(counts); free(displs);
}
static void run_allgatherv(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)op; (void)root; (void)ip;
  int *counts = ints(size), *displs = ints(size);
  vector_layout(count, counts, displs);
  COLL(MPI_Allgatherv, MPI_Iallgatherv, s, counts[rank], t, r, counts, displs, t, MPI_COMM_WORLD);
  free(counts); free(displs);
}
static void run_alltoall(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)op; (void)root; COLL(MPI_Alltoall, MPI_Ialltoall, ip ? MPI_IN_PLACE : s, count, t, r, count, t, MPI_COMM_WORLD);
}
static void run_alltoallv(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)op; (void)root; (void)ip;
  /* rank p sends count + (p + q) % 2 elements to q: what q expects from p */
  int *sc = ints(size), *sd = ints(size), *rc = ints(size), *rd = ints(size);
  for (int q = 0; q < size; ++q) {
    sc[q] = rc[q] = count + (rank + q) % 2;
    sd[q] = rd[q] = q * (count + 3);
  }
  COLL(MPI_Alltoallv, MPI_Ialltoallv, s, sc, sd, t, r, rc, rd, t, MPI_COMM_WORLD);
  free(sc); free(sd); free(rc); free(rd);
}
static void run_scan(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)root; COLL(MPI_Scan, MPI_Iscan, ip ? MPI_IN_PLACE : s, r, count, t, op, MPI_COMM_WORLD);
}
static void run_exscan(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)root; COLL(MPI_Exscan, MPI_Iexscan, ip ? MPI_IN_PLACE : s, r, count, t, op, MPI_COMM_WORLD);
}
/* Point-to-point around the ring (mode 0: MPI_Sendrecv, 1: MPI_Sendrecv_replace on the receive
 * buffer, 2: MPI_Send/MPI_Recv, 3: MPI_Ssend/MPI_Recv; the pairs' order keeps them deadlock-free
 * at any rank count: even ranks send first, odd ones receive first; one rank alone uses Sendrecv). */
static void run_p2p(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int mode, int ip) {
  (void)op; (void)ip;
  if (mode == 0 || size == 1) {
    MPI_Sendrecv(s, count, t, right(), 7, r, count, t, left(), 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (mode == 1) {
    MPI_Sendrecv_replace(r, count, t, right(), 8, left(), 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    int (*send)(const void*, int, MPI_Datatype, int, int, MPI_Comm) = mode == 2 ? MPI_Send : MPI_Ssend;
    if (rank % 2 == 0) send(s, count, t, right(), 9, MPI_COMM_WORLD);
    MPI_Recv(r, count, t, left(), 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank % 2 == 1) send(s, count, t, right(), 9, MPI_COMM_WORLD);
  }
}
/* Nonblocking around the ring: Irecv into two halves of the receive buffer, Isend (or Issend) of
 * the send buffer's halves, completed by mode: 0 MPI_Waitall, 1 MPI_Wait each, 2 MPI_Waitany, 3
 * MPI_Waitsome, 4 MPI_Test until done, 5 MPI_Testall, 6 MPI_Testany, 7 MPI_Testsome. */
static void run_nonblocking(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int mode, int ip) {
  (void)op; (void)ip;
  int tsize = 0;
  MPI_Type_size(t, &tsize);
  const int half = count / 2;
  MPI_Request req[4];
  MPI_Irecv(r, half, t, left(), 11, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv((char*)r + (size_t)half * tsize, count - half, t, left(), 12, MPI_COMM_WORLD, &req[1]);
  MPI_Isend(s, half, t, right(), 11, MPI_COMM_WORLD, &req[2]);
  (mode % 2 ? MPI_Issend : MPI_Isend)((char*)s + (size_t)half * tsize, count - half, t, right(), 12, MPI_COMM_WORLD,
                                      &req[3]);
  int done = 0, flag = 0, index = 0, outcount = 0, indices[4];
  switch (mode) {
    case 0: MPI_Waitall(4, req, MPI_STATUSES_IGNORE); break;
    case 1: for (int i = 3; i >= 0; --i) MPI_Wait(&req[i], MPI_STATUS_IGNORE); break;
    case 2: while (done < 4) { MPI_Waitany(4, req, &index, MPI_STATUS_IGNORE); ++done; } break;
    case 3: while (done < 4) { MPI_Waitsome(4, req, &outcount, indices, MPI_STATUSES_IGNORE); done += outcount; } break;
    case 4: for (int i = 0; i < 4; ++i) do MPI_Test(&req[i], &flag, MPI_STATUS_IGNORE); while (!flag); break;
    case 5: do MPI_Testall(4, req, &flag, MPI_STATUSES_IGNORE); while (!flag); break;
    case 6: while (done < 4) { MPI_Testany(4, req, &index, &flag, MPI_STATUS_IGNORE); done += flag && index != MPI_UNDEFINED; } break;
    default: while (done < 4) { MPI_Testsome(4, req, &outcount, indices, MPI_STATUSES_IGNORE); done += outcount; } break;
  }
}

static void staged_calls(unsigned seed) {
  const MPI_Datatype types[] = {MPI_DOUBLE, MPI_INT, MPI_C_DOUBLE_COMPLEX};
  const int sizes[] = {8, 4, 16};
  const int counts[] = {1, 17, 1000};
  const size_t n = (size_t)size;
  for (int ti = 0; ti < 3; ++ti)
    for (int ci = 0; ci < 3; ++ci) {
      const MPI_Datatype t = types[ti];
      const int c = counts[ci], ts = sizes[ti];
      const size_t vec = n * (size_t)(c + 3);  /* a vector call's buffer: every block and its gap */
      unsigned s = seed + 101u * (unsigned)(ti * 10 + ci);
      for (int root = 0; root < size; ++root)
        for (int ip = 0; ip < 2; ++ip) {
          both("Gather", run_gather, c, t, ts, MPI_OP_NULL, root, ip, c, (size_t)c * n, s + 1 + root);
          both("Scatter", run_scatter, c, t, ts, MPI_OP_NULL, root, ip, (size_t)c * n, ip ? (size_t)c * n : (size_t)c, s + 2 + root);
        }
      for (int root = 0; root < size; ++root) {
        both("Gatherv", run_gatherv, c, t, ts, MPI_OP_NULL, root, 0, (size_t)c + 1, vec, s + 3 + root);
        both("Scatterv", run_scatterv, c, t, ts, MPI_OP_NULL, root, 0, vec, (size_t)c + 1, s + 4 + root);
      }
      both("Allgatherv", run_allgatherv, c, t, ts, MPI_OP_NULL, 0, 0, (size_t)c + 1, vec, s + 5);
      for (int ip = 0; ip < 2; ++ip)
        both("Alltoall", run_alltoall, c, t, ts, MPI_OP_NULL, 0, ip, (size_t)c * n, (size_t)c * n, s + 6);
      both("Alltoallv", run_alltoallv, c, t, ts, MPI_OP_NULL, 0, 0, vec, vec, s + 7);
      for (int ip = 0; ip < 2; ++ip) {
        both("Scan", run_scan, c, t, ts, MPI_SUM, 0, ip, c, c, s + 8);
        if (t != MPI_C_DOUBLE_COMPLEX) both("Exscan", run_exscan, c, t, ts, MPI_MAX, 0, ip, c, c, s + 9);
      }
      for (int mode = 0; mode < 4; ++mode) both("point-to-point", run_p2p, c, t, ts, MPI_OP_NULL, mode, mode == 1, c, c, s + 10 + mode);
      for (int mode = 0; mode < 8; ++mode) both("nonblocking", run_nonblocking, c, t, ts, MPI_OP_NULL, mode, 0, c, c, s + 20 + mode);
    }
}

/* Every collective on every type, op, count, root, in place or not; then the staged calls. */
static void collectives(unsigned seed) {
  const MPI_Datatype types[] = {MPI_FLOAT, MPI_DOUBLE, MPI_INT, MPI_LONG_LONG, MPI_UNSIGNED, MPI_C_DOUBLE_COMPLEX};
  const int sizes[] = {4, 8, 4, 8, 4, 16};
  const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
  const int counts[] = {1, 3, 17, 1000};
  for (int ti = 0; ti < 6; ++ti)
    for (int oi = 0; oi < 4; ++oi) {
      if (types[ti] == MPI_C_DOUBLE_COMPLEX && (ops[oi] == MPI_MAX || ops[oi] == MPI_MIN)) continue;
      for (int ci = 0; ci < 4; ++ci)
        for (int ip = 0; ip < 2; ++ip) {
          int c = counts[ci];
          unsigned s = seed + 977u * (unsigned)(ti * 100 + oi * 10 + ci);
          both("Allreduce", run_allreduce, c, types[ti], sizes[ti], ops[oi], 0, ip, c, c, s);
          both("Reduce_scatter_block", run_rsb, c, types[ti], sizes[ti], ops[oi], 0, ip, (size_t)c * size,
               ip ? (size_t)c * size : (size_t)c, s + 1);
          both("Reduce_scatter", run_rs, c, types[ti], sizes[ti], ops[oi], 0, ip, (size_t)c * size,
               ip ? (size_t)c * size : (size_t)c, s + 2);
          for (int root = 0; root < size; ++root)
            both("Reduce", run_reduce, c, types[ti], sizes[ti], ops[oi], root, ip, c, c, s + 3 + root);
        }
    }
  for (int ti = 0; ti < 6; ++ti)
    for (int ci = 0; ci < 4; ++ci) {
      int c = counts[ci];
      for (int root = 0; root < size; ++root)
        both("Bcast", run_bcast, c, types[ti], sizes[ti], MPI_OP_NULL, root, 0, 0, c, seed + 31u * (unsigned)(ti + ci) + root);
      both("Allgather", run_allgather, c, types[ti], sizes[ti], MPI_OP_NULL, 0, 0, c, (size_t)c * size, seed + 7u * (unsigned)ci);
    }
  staged_calls(seed);
}

/* The library recognizes the handles this program passes: an executable holds its own copies of
 * MPI's predefined objects (copy relocations), which are not the objects libmpi exports under
 * the same names. Failing this, every device call went to MPI and the library's own calls used
 * objects MPI never initialized. */
static void handles_known(void) {
  int (*carry)(MPI_Datatype, MPI_Op, int) =
      (int (*)(MPI_Datatype, MPI_Op, int))dlsym(RTLD_DEFAULT, "hpcolls_pmpi_staging_kernels_carry");
  check(carry != NULL, "the library exports hpcolls_pmpi_staging_kernels_carry");
  if (carry == NULL) return;
  const MPI_Datatype carried[] = {MPI_FLOAT, MPI_DOUBLE, MPI_INT, MPI_LONG_LONG, MPI_UNSIGNED, MPI_INT64_T, MPI_C_DOUBLE_COMPLEX};
  const MPI_Op reduced[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
  char what[96];
  for (int i = 0; i < 7; ++i) {
    snprintf(what, sizeof what, "the kernels carry predefined type %d as this program names it", i);
    check(carry(carried[i], MPI_OP_NULL, 0), what);
    for (int k = 0; k < 2; ++k) {
      snprintf(what, sizeof what, "the kernels reduce predefined type %d with predefined op %d", i, k);
      check(carry(carried[i], reduced[k], 1), what);
    }
  }
  check(carry(MPI_DOUBLE, MPI_MIN, 1) && !carry(MPI_C_DOUBLE_COMPLEX, MPI_MIN, 1), "MIN on double, not on complex");
  check(!carry(MPI_DOUBLE_INT, MPI_MAXLOC, 1), "MAXLOC goes to MPI");
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
  MPI_Type_commit(&pair);
  check(!carry(pair, MPI_OP_NULL, 0), "a derived type goes to MPI");
  MPI_Type_free(&pair);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  pretend = (void (*)(void*, size_t))dlsym(RTLD_DEFAULT, "hpcolls_pmpi_staging_pretend_device");
  if (pretend) {
    dev = mmap(NULL, dev_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pretend(dev, dev_bytes);
  } else if (rank == 0) {
    printf("note: the PMPI library is not loaded: host buffers only (the staged path needs it)\n");
  }
  /* run.sh gives both runs (with and without the library) one fresh seed, so digests compare */
  const char* given = getenv("HPCOLLS_TEST_SEED");
  unsigned seed = given ? (unsigned)strtoul(given, NULL, 10) : (unsigned)time(NULL);
  MPI_Bcast(&seed, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
  collectives(seed);
  immediate = 1;  /* again in the nonblocking forms */
  collectives(seed + 1);
  immediate = 0;
  if (pretend) handles_known();
  if (pretend) {
    unsigned long long (*calls)(void) = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, "hpcolls_pmpi_staging_calls");
    check(calls != NULL && calls() > 0, "the library is loaded but no call went through it");
  }
  uint64_t digests[64] = {0};
  MPI_Gather(&digest, 1, MPI_UINT64_T, digests, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("digest");
    for (int q = 0; q < size && q < 64; ++q) printf(" %016llx", (unsigned long long)digests[q]);
    printf("\n%s: %d failures%s\n", all_failures ? "FAIL" : "ok", all_failures,
           pretend ? "" : " (host buffers only)");
  }
  MPI_Finalize();
  return all_failures ? 1 : 0;
}
