/* hpcolls' C entry: how another extension module calls hpcolls' collectives without its pybind11
 * classes (the solver's kernels call hpcolls through it: docs/ARCHITECTURE.md#solvers). Plain C;
 * it includes hpcolls/device/comm.h (plain C too) for version 3's device_comm.
 *
 * Getting it (with the GIL held):
 *   const hpcolls_c_api* api = (const hpcolls_c_api*)PyCapsule_Import(HPCOLLS_C_API_CAPSULE, 0);
 *   -- the capsule is hpcolls._native.c_api_v1; hpcolls.c_api.capsule() returns it too --
 *   hpcolls_comm* comm = (hpcolls_comm*)PyCapsule_GetPointer(handle, HPCOLLS_COMM_CAPSULE);
 *   -- `handle` from hpcolls.c_api.comm_capsule(communicator, device) (NativeComm.capsule()); it
 *      keeps the communicator's native half alive for as long as the capsule lives --
 *
 * ABI rule: the struct is versioned and append-only. A field, once published, keeps its offset,
 * type and meaning for the life of capsule name "..._v1"; a new field goes at the end, with
 * `version` raised by one and `struct_size` growing with it. A caller checks that `struct_size`
 * covers the last field it uses (HPCOLLS_C_API_HAS(api, field)) and never copies the struct. A
 * change that cannot be an append (a field's meaning or a calling convention) takes a new capsule
 * name (..._v2), and the old one is kept while anything may still use it.
 *
 * Calls: on the thread that holds the GIL or not (they do not touch Python), never concurrently
 * on the same communicator (MPI's rule: each rank issues its collectives in one order).
 */
#ifndef HPCOLLS_C_API_H
#define HPCOLLS_C_API_H

#include <stddef.h>
#include <stdint.h>

#include "hpcolls/device/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HPCOLLS_C_API_CAPSULE "hpcolls._native.c_api_v1"
#define HPCOLLS_COMM_CAPSULE "hpcolls._native.comm_v1"
#define HPCOLLS_C_API_VERSION 3

/* Element types and reduction operators, numbered as hpcolls.dtypes numbers them. */
enum hpcolls_dtype {
  HPCOLLS_F16 = 0, HPCOLLS_BF16 = 1, HPCOLLS_F32 = 2, HPCOLLS_F64 = 3, HPCOLLS_C64 = 4, HPCOLLS_C128 = 5,
  HPCOLLS_I32 = 6, HPCOLLS_I64 = 7, HPCOLLS_U32 = 8, HPCOLLS_U64 = 9
};
enum hpcolls_op { HPCOLLS_SUM = 0, HPCOLLS_PROD = 1, HPCOLLS_MIN = 2, HPCOLLS_MAX = 3 };

/* What a collective returned. Below zero: nothing was launched and last_error() says why. */
enum hpcolls_status {
  HPCOLLS_LAUNCHED = 1,     /* queued on the stream, in order with the caller's other work there */
  HPCOLLS_NOT_TAKEN = 0,    /* the native path does not carry this message: the caller falls back */
  HPCOLLS_ERROR = -1,       /* a bad argument or any other failure */
  HPCOLLS_TIMEOUT = -2,     /* a kernel gave up waiting for a peer; the communicator is broken now */
  HPCOLLS_BROKEN = -3,      /* the communicator timed out earlier or was freed */
  HPCOLLS_CUDA_ERROR = -4   /* a CUDA runtime call failed */
};

typedef struct hpcolls_comm hpcolls_comm; /* opaque: one communicator's native half on this rank */

typedef struct hpcolls_c_api {
  /* version 1 */
  uint32_t version;     /* HPCOLLS_C_API_VERSION of the hpcolls that made it (>= 1) */
  uint32_t struct_size; /* sizeof(hpcolls_c_api) there: which fields exist */
  /* AllReduce of `count` elements from `send` into `recv` (device pointers on the communicator's
   * GPU; send == recv is in place) on CUDA stream `stream` (a cudaStream_t; 0 is the legacy default
   * stream). Every rank of the communicator must make the same call. */
  int (*allreduce)(hpcolls_comm* comm, const void* send, void* recv, size_t count, int dtype, int op,
                   void* stream);
  int (*rank)(const hpcolls_comm* comm);
  int (*nranks)(const hpcolls_comm* comm);
  int (*device)(const hpcolls_comm* comm); /* CUDA device ordinal */
  /* The last failure's message on this thread ("" when none), valid until the next call there. */
  const char* (*last_error)(void);
  /* version 2: the other native collectives, as allreduce is called (device pointers, `stream`,
   * every rank the same call, the same statuses; HPCOLLS_NOT_TAKEN the same on every rank). */
  /* Allgather of `bytes` bytes per rank: rank q's block lands at recv + q * bytes; in place when
   * send == recv + rank * bytes. */
  int (*allgather)(hpcolls_comm* comm, const void* send, void* recv, size_t bytes, void* stream);
  /* Bcast of `bytes` bytes from rank `root`'s buf into every other rank's. */
  int (*bcast)(hpcolls_comm* comm, void* buf, size_t bytes, int root, void* stream);
  /* Reduce of `count` elements into rank `root`'s recv, in rank order (recv unused elsewhere); in
   * place at the root when send == recv. */
  int (*reduce)(hpcolls_comm* comm, const void* send, void* recv, size_t count, int dtype, int op, int root,
                void* stream);
  /* Reduce_scatter: counts[q] elements (nranks entries, blocks back to back in send) reduced into
   * rank q's recv; in place when send == recv (input in recv, result at its start). */
  int (*reduce_scatter)(hpcolls_comm* comm, const void* send, void* recv, const size_t* counts, int dtype, int op,
                        void* stream);
  /* version 3: the device API (hpcolls/device/comm.h, docs/DEVICE_API.md). Fills *out with the
   * communicator's device struct, for kernels that call hpcolls::device operations themselves.
   * Returns HPCOLLS_LAUNCHED (1: filled; nothing is launched), or a negative status with
   * last_error() saying why (a time-out seen earlier: HPCOLLS_TIMEOUT). */
  int (*device_comm)(hpcolls_comm* comm, hpcolls_device_comm_t* out);
  /* version 4 and later: appended here */
} hpcolls_c_api;

/* Whether `api` has `field` (a caller compiled against a newer header may run on an older hpcolls). */
#define HPCOLLS_C_API_HAS(api, field) \
  ((api)->struct_size >= offsetof(hpcolls_c_api, field) + sizeof(((hpcolls_c_api*)0)->field))

#ifdef __cplusplus
}
#endif

#endif /* HPCOLLS_C_API_H */
