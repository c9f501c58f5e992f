/* The six collectives the PMPI library takes, on host buffers and (where the library is loaded) on
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
    else if (t == MPI_C_DOUBLE_COMPLEX) { ((double*)p)[2 * i] = v; ((double*)p)[2 * i + 1] = -v; }
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
    char what[160];
    snprintf(what, sizeof what, "%s count %d root %d in_place %d: staged result differs from host result", name, count,
             root, in_place);
    check(memcmp(expect, hr, rb) == 0, what);
    free(expect);
  }
  free(hs); free(hr);
}

static void run_allreduce(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)root; MPI_Allreduce(ip ? MPI_IN_PLACE : s, r, count, t, op, MPI_COMM_WORLD);
}
static void run_bcast(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)s; (void)op; (void)ip; MPI_Bcast(r, count, t, root, MPI_COMM_WORLD);
}
static void run_reduce(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  MPI_Reduce(ip && rank == root ? MPI_IN_PLACE : s, r, count, t, op, root, MPI_COMM_WORLD);
}
static void run_allgather(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)op; (void)root; (void)ip; MPI_Allgather(s, count, t, r, count, t, MPI_COMM_WORLD);
}
static void run_rsb(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)root; MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : s, r, count, t, op, MPI_COMM_WORLD);
}
static void run_rs(void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, int ip) {
  (void)root;
  int* counts = malloc(sizeof(int) * size);
  for (int q = 0; q < size; ++q) counts[q] = count;  /* equal blocks: in place keeps block 0 the largest */
  MPI_Reduce_scatter(ip ? MPI_IN_PLACE : s, r, counts, t, op, MPI_COMM_WORLD);
  free(counts);
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
