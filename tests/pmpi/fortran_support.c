/* The C side of the Fortran test (collectives_fortran.F90): what Fortran does awkwardly (finding
 * the PMPI library's test hooks, mapping the pretend device range, filling and digesting raw
 * bytes), so that the Fortran program only makes the MPI calls whose entry points it tests.
 *
 * Pretend device memory (hpcolls_pmpi_staging_pretend_device): a range mapped with no access,
 * counted as device memory by the library, which must stage it through host memory on a CPU
 * machine. A Fortran entry the library does not stand in front of hands the range to MPI, which
 * faults on it: a missing interposition fails the test instead of passing unseen.
 *
 * Real device memory (HPCOLLS_TEST_DEVICE=cuda, on a GPU machine: tests/pmpi/fortran_gpu.sh): the
 * range is allocated on the GPU instead, through the CUDA driver (dlopen'd: nothing to link, the
 * primary context the library's runtime uses too), and the library runs the calls on its kernels.
 * The program still "opens" the range to fill and compare it: opening copies it into a host
 * shadow, closing copies the shadow back, and the helpers below read and write the shadow for
 * addresses in the range. The Fortran program is the same in both modes.
 *
 *   cc -c fortran_support.c && mpifort collectives_fortran.F90 fortran_support.o -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static void (*pretend)(void*, size_t);
static unsigned long long (*calls)(void);
static char* dev;
static const size_t dev_bytes = 1 << 21;
static uint64_t digest = 1469598103934665603ull;

/* Real device mode: the driver's functions, the range's host shadow. */
static char* shadow;
static int (*mem_htod)(unsigned long long, const void*, size_t);
static int (*mem_dtoh)(void*, unsigned long long, size_t);

/* The range on the GPU (HPCOLLS_TEST_DEVICE=cuda): 1, or 0 with the reason on stderr. */
static int cuda_range(void) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (cuda == NULL) { fprintf(stderr, "HPCOLLS_TEST_DEVICE=cuda: no libcuda.so.1 (%s)\n", dlerror()); return 0; }
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(cuda, "cuInit");
  int (*count)(int*) = (int (*)(int*))dlsym(cuda, "cuDeviceGetCount");
  int (*get)(int*, int) = (int (*)(int*, int))dlsym(cuda, "cuDeviceGet");
  int (*retain)(void**, int) = (int (*)(void**, int))dlsym(cuda, "cuDevicePrimaryCtxRetain");
  int (*set)(void*) = (int (*)(void*))dlsym(cuda, "cuCtxSetCurrent");
  int (*alloc)(unsigned long long*, size_t) = (int (*)(unsigned long long*, size_t))dlsym(cuda, "cuMemAlloc_v2");
  mem_htod = (int (*)(unsigned long long, const void*, size_t))dlsym(cuda, "cuMemcpyHtoD_v2");
  mem_dtoh = (int (*)(void*, unsigned long long, size_t))dlsym(cuda, "cuMemcpyDtoH_v2");
  int devices = 0, device = 0;
  void* context = NULL;
  unsigned long long address = 0;
  const char* local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!init || !count || !get || !retain || !set || !alloc || !mem_htod || !mem_dtoh || init(0) != 0 ||
      count(&devices) != 0 || devices < 1 || get(&device, (local ? atoi(local) : 0) % devices) != 0 ||
      retain(&context, device) != 0 || set(context) != 0 || alloc(&address, dev_bytes) != 0) {
    fprintf(stderr, "HPCOLLS_TEST_DEVICE=cuda: no GPU memory from the CUDA driver\n");
    return 0;
  }
  dev = (char*)(uintptr_t)address;
  shadow = calloc(1, dev_bytes);
  return shadow != NULL && mem_htod(address, shadow, dev_bytes) == 0;
}

/* 1 when the PMPI library is loaded (its hooks found: the range is set up), else 0. */
int hpcolls_test_init(void) {
  pretend = (void (*)(void*, size_t))dlsym(RTLD_DEFAULT, "hpcolls_pmpi_staging_pretend_device");
  calls = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, "hpcolls_pmpi_staging_calls");
  if (pretend == NULL || calls == NULL) return 0;
  const char* mode = getenv("HPCOLLS_TEST_DEVICE");
  if (mode != NULL && strcmp(mode, "cuda") == 0) {
    if (!cuda_range()) exit(3);
    return 1;
  }
  dev = mmap(NULL, dev_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (dev == MAP_FAILED) return 0;
  pretend(dev, dev_bytes);
  return 1;
}

/* Where the helpers read and write an address: in the range on the GPU, its shadow. */
static void* host_view(const void* p) {
  const char* c = p;
  return shadow != NULL && c >= dev && c < dev + dev_bytes ? shadow + (c - dev) : (void*)c;
}

/* Calls that went through the library's entry points so far (-1 without the library). */
long long hpcolls_test_calls(void) { return calls ? (long long)calls() : -1; }

/* The pretend device range (null without the library), and its size in bytes. */
void* hpcolls_test_device(void) { return pretend ? dev : NULL; }
size_t hpcolls_test_device_bytes(void) { return dev_bytes; }

/* Opens (1) or closes (0) the range to this process's own loads and stores (on the GPU: its shadow
 * copied from and back to it). */
void hpcolls_test_open(int on) {
  if (shadow != NULL) {
    const int failed = on ? mem_dtoh(shadow, (uintptr_t)dev, dev_bytes) : mem_htod((uintptr_t)dev, shadow, dev_bytes);
    if (failed) { fprintf(stderr, "HPCOLLS_TEST_DEVICE=cuda: a copy of the range failed (%d)\n", failed); exit(3); }
  } else if (dev) {
    mprotect(dev, dev_bytes, on ? PROT_READ | PROT_WRITE : PROT_NONE);
  }
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
  unsigned char* b = host_view(p);
  for (size_t i = 0; i < bytes; ++i) { seed = seed * 1103515245u + 12345u; b[i] = (unsigned char)(seed >> 16); }
}

/* Random values that every type's arithmetic keeps exact (sums, products and extremes in any
 * order give the same bits): kind 1 REAL*8, 2 REAL*4, 3 INTEGER*4, 4 INTEGER*8, 5 COMPLEX*16. */
void hpcolls_test_fill(void* p, int count, int kind, unsigned seed) {
  p = host_view(p);
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
int hpcolls_test_same(const void* a, const void* b, size_t bytes) { return memcmp(host_view(a), host_view(b), bytes) == 0; }

/* 1 when each of the first `count` doubles of a and b is the same bits or the same value (+0 and -0
 * alike): complex PROD's results, whose zero parts take their sign from the order of the
 * multiplications, which MPI leaves open (the library's kernels multiply in rank order, Open MPI in
 * its tree's); the fill's parts are small integers, so comparing values still catches any wrong
 * product, and bits first keeps a poisoned buffer (NaN patterns) equal to itself. */
int hpcolls_test_same_values(const void* a, const void* b, size_t count) {
  const unsigned char* x = host_view(a);
  const unsigned char* y = host_view(b);
  for (size_t i = 0; i < count; ++i) {
    double u, v;
    memcpy(&u, x + i * sizeof u, sizeof u);
    memcpy(&v, y + i * sizeof v, sizeof v);
    if (memcmp(&u, &v, sizeof u) != 0 && !(u == v)) return 0;
  }
  return 1;
}
