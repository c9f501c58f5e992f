/* The C side of the Fortran test (collectives_fortran.F90): what Fortran does awkwardly (finding
 * the PMPI library's test hooks, mapping the pretend device range, filling and digesting raw
 * bytes), so that the Fortran program only makes the MPI calls whose entry points it tests.
 *
 * Pretend device memory (hpcolls_pmpi_staging_pretend_device): a range mapped with no access,
 * counted as device memory by the library, which must stage it through host memory on a CPU
 * machine. A Fortran entry the library does not stand in front of hands the range to MPI, which
 * faults on it: a missing interposition fails the test instead of passing unseen.
 *
 *   cc -c fortran_support.c && mpifort collectives_fortran.F90 fortran_support.o -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static void (*pretend)(void*, size_t);
static unsigned long long (*calls)(void);
static char* dev;
static const size_t dev_bytes = 1 << 21;
static uint64_t digest = 1469598103934665603ull;

/* 1 when the PMPI library is loaded (its hooks found: the pretend range is set up), else 0. */
int hpcolls_test_init(void) {
  pretend = (void (*)(void*, size_t))dlsym(RTLD_DEFAULT, "hpcolls_pmpi_staging_pretend_device");
  calls = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, "hpcolls_pmpi_staging_calls");
  if (pretend == NULL || calls == NULL) return 0;
  dev = mmap(NULL, dev_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (dev == MAP_FAILED) return 0;
  pretend(dev, dev_bytes);
  return 1;
}

/* Calls that went through the library's entry points so far (-1 without the library). */
long long hpcolls_test_calls(void) { return calls ? (long long)calls() : -1; }

/* The pretend device range (null without the library), and its size in bytes. */
void* hpcolls_test_device(void) { return pretend ? dev : NULL; }
size_t hpcolls_test_device_bytes(void) { return dev_bytes; }

/* Opens (1) or closes (0) the pretend range to this process's own loads and stores. */
void hpcolls_test_open(int on) {
  if (dev) mprotect(dev, dev_bytes, on ? PROT_READ | PROT_WRITE : PROT_NONE);
}

/* The run's seed, below 10^6 (Fortran adds to it): HPCOLLS_TEST_SEED (run.sh gives both runs,
 * with and without the library, the same one, so that their digests compare), else the time. */
int hpcolls_test_seed(void) {
  const char* given = getenv("HPCOLLS_TEST_SEED");
  return (int)((given ? (unsigned)strtoul(given, NULL, 10) : (unsigned)time(NULL)) % 1000000u);
}

/* 1 when HPCOLLS_TEST_NO_INPLACE_REDUCE_ROOTS=1: in-place Reduce only at root 0. Debian's MPICH
 * 4.0.2 (ch4:ucx) crashes in MPI_Reduce in place at another root, from C as well, without this
 * library: that MPI's own bug, which this leaves out so the rest runs there. */
int hpcolls_test_no_inplace_reduce_roots(void) {
  const char* given = getenv("HPCOLLS_TEST_NO_INPLACE_REDUCE_ROOTS");
  return given != NULL && strcmp(given, "1") == 0;
}

/* Random bytes (outputs poisoned before a call). */
void hpcolls_test_poison(void* p, size_t bytes, unsigned seed) {
  unsigned char* b = p;
  for (size_t i = 0; i < bytes; ++i) { seed = seed * 1103515245u + 12345u; b[i] = (unsigned char)(seed >> 16); }
}

/* Random values that every type's arithmetic keeps exact (sums, products and extremes in any
 * order give the same bits): kind 1 REAL*8, 2 REAL*4, 3 INTEGER*4, 4 INTEGER*8, 5 COMPLEX*16. */
void hpcolls_test_fill(void* p, int count, int kind, unsigned seed) {
  for (int i = 0; i < count; ++i) {
    seed = seed * 1103515245u + 12345u;
    int v = (int)((seed >> 16) % 7) - 3;
    switch (kind) {
      case 1: ((double*)p)[i] = (double)v * 0.25; break;
      case 2: ((float*)p)[i] = (float)v * 0.5f; break;
      case 3: ((int32_t*)p)[i] = v; break;
      case 4: ((int64_t*)p)[i] = (int64_t)v << 20; break;
      case 5: ((double*)p)[2 * i] = v; ((double*)p)[2 * i + 1] = -v * 0.5; break;
    }
  }
}

/* Folds bytes into this rank's digest of every host result (FNV-1a). */
void hpcolls_test_mix(const void* p, size_t bytes) {
  const unsigned char* b = p;
  for (size_t i = 0; i < bytes; ++i) digest = (digest ^ b[i]) * 1099511628211ull;
}
long long hpcolls_test_digest(void) { return (long long)digest; }

/* 1 when the first `bytes` bytes of a and b are the same. */
int hpcolls_test_same(const void* a, const void* b, size_t bytes) { return memcmp(a, b, bytes) == 0; }
