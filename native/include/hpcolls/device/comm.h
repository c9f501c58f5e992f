/* hpcolls' device API, the plain part: what a kernel needs of one communicator to exchange data
 * with its peers from inside itself (docs/DEVICE_API.md). Plain C, usable from C, C++, CUDA C++
 * and NVRTC; the operations themselves are in hpcolls/device/collectives.cuh (CUDA C++).
 *
 * A host call fills an hpcolls_device_comm_t for a communicator on this rank:
 *   - Python: hpcolls.Communicator.device_comm() (hpcolls/device_api.py);
 *   - C, C++, Fortran under the PMPI library: hpcolls_device_comm(MPI_Comm, hpcolls_device_comm_t*)
 *     (hpcolls/pmpi.h);
 *   - another Python extension: the C entry's device_comm (hpcolls/c_api.h, version 3).
 * All three copy the same thing, NativeComm::device_comm() (native/hpcolls/native_comm.cpp): the
 * communicator's LL scratch as every peer's base is mapped here, the device-resident epoch
 * counters its host-launched kernels advance, and the host-mapped error record its host calls
 * read. It stays valid until the communicator is closed or freed; it is a value: pass it to a
 * kernel by value, or copy it into device memory and pass the pointer.
 *
 * ABI: this layout is version HPCOLLS_DEVICE_API_VERSION. It is the head of the struct the
 * library's own kernels receive, so a field never moves; a change that would move one takes a new
 * version and a new struct name.
 */
#ifndef HPCOLLS_DEVICE_COMM_H
#define HPCOLLS_DEVICE_COMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HPCOLLS_DEVICE_API_VERSION 1
/* Ranks a communicator may have on the native path (peer pointers travel by value). */
#define HPCOLLS_DEVICE_MAX_RANKS 32
/* Lines at the start of a scratch half that carry the handshakes of the rooted collectives, one
 * per rank (hpcolls/handshake.cuh); a broadcast's data follows them. */
#define HPCOLLS_DEVICE_HANDSHAKE_LINES HPCOLLS_DEVICE_MAX_RANKS

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define HPCOLLS_DEVICE_HD __host__ __device__
#else
#define HPCOLLS_DEVICE_HD
#endif

/* Device-resident counters of one communicator on one rank. The epoch is advanced by the kernels
 * themselves (host-launched or the device API's operations), so CUDA graphs replay without the host
 * and host-path and device-path calls share one sequence of epochs. */
typedef struct hpcolls_device_counters_s {
  uint32_t epoch;       /* calls completed on this communicator */
  uint32_t blocks_done; /* blocks of the running host-launched call that have finished */
  int32_t error;        /* non-zero once any call timed out: later calls exit at once */
  int32_t pad;
} hpcolls_device_counters_t;

/* Written by a kernel that gave up waiting, into host-mapped memory the host reads without a
 * device synchronization; its next host call on the communicator raises CollectiveTimeout from
 * it. `code` is written last (after a system fence): a non-zero code means the rest is complete. */
typedef struct hpcolls_error_record_s {
  int32_t code;       /* 0: none, 1: time-out */
  int32_t rank;       /* the rank that timed out */
  int32_t peer;       /* the peer it was waiting for */
  int32_t algo;       /* 0: one-shot, 1: two-shot */
  uint32_t epoch;     /* the call's epoch (1 = first call on the communicator) */
  int32_t collective; /* 0 Allreduce, 1 Allgather, 2 Bcast, 3 Reduce, 4 Reduce_scatter; written only when
                         not 0, the record starting zeroed */
} hpcolls_error_record_t;

/* One communicator on one rank, as a kernel sees it. */
typedef struct hpcolls_device_comm_s {
  /* Base of each rank's LL scratch (two halves: double buffering by epoch parity) as mapped in
   * this process; [rank] is our own. Entries at and past nranks are unused. */
  void* scratch[HPCOLLS_DEVICE_MAX_RANKS];
  hpcolls_device_counters_t* counters; /* device memory */
  hpcolls_error_record_t* host_error;  /* device address of host-mapped memory */
  uint64_t half_bytes;                 /* bytes of one half of each rank's scratch */
  uint64_t timeout_ns;                 /* a wait gives up after this long (HPCOLLS_TIMEOUT) */
  int32_t rank;
  int32_t nranks;
} hpcolls_device_comm_t;

/* The largest message, in bytes per rank, each operation carries on `c` (a payload byte takes two
 * scratch bytes: an LL line is half flag). The same on every rank of a communicator; an operation
 * asked for more returns HPCOLLS_DEVICE_TOO_LARGE on every rank and moves nothing. */
HPCOLLS_DEVICE_HD static inline uint64_t hpcolls_device_allreduce_max_bytes(const hpcolls_device_comm_t* c) {
  /* a slot per rank of the message's 16-byte chunks, two 16-byte lines each */
  return c->nranks < 1 ? 0 : c->half_bytes / (32u * (uint64_t)c->nranks) * 16u;
}
HPCOLLS_DEVICE_HD static inline uint64_t hpcolls_device_allgather_max_bytes(const hpcolls_device_comm_t* c) {
  return hpcolls_device_allreduce_max_bytes(c); /* the same slots, no reduction */
}
HPCOLLS_DEVICE_HD static inline uint64_t hpcolls_device_broadcast_max_bytes(const hpcolls_device_comm_t* c) {
  const uint64_t lines = c->half_bytes / 16u; /* the handshake lines, then the root's chunks */
  return lines <= HPCOLLS_DEVICE_HANDSHAKE_LINES ? 0 : (lines - HPCOLLS_DEVICE_HANDSHAKE_LINES) / 2u * 16u;
}

/* What an operation returned: the same on every thread that called it (the block, or the grid). */
enum hpcolls_device_status {
  HPCOLLS_DEVICE_OK = 0,
  /* This rank waited past the time-out for a peer (recorded in the error record: the host's next
   * call on the communicator raises CollectiveTimeout), or an earlier call had: nothing valid was
   * stored. */
  HPCOLLS_DEVICE_BROKEN = 1,
  HPCOLLS_DEVICE_TOO_LARGE = 2,         /* past hpcolls_device_*_max_bytes: nothing moved */
  HPCOLLS_DEVICE_EPOCHS_EXHAUSTED = 3,  /* 2^32-2 calls made: Dup() a new communicator */
  HPCOLLS_DEVICE_BAD_ROOT = 4,          /* a broadcast's root outside 0..nranks-1: nothing moved */
  HPCOLLS_DEVICE_NOT_COOPERATIVE = 5    /* a grid-scope operation where cooperative groups
                                           report no grid barrier: nothing moved (an ordinary
                                           launch is not always caught: docs/DEVICE_API.md) */
};

#ifdef __cplusplus
}
#endif

#endif /* HPCOLLS_DEVICE_COMM_H */
