/* hpcolls' C API beside the PMPI library (libhpcolls_pmpi_staging.so, `python -m hpcolls preload`):
 * for C, C++ and (through ISO_C_BINDING) Fortran programs that call MPI on device buffers.
 * docs/DROP_IN.md, "C, C++ and Fortran programs", says how a program uses it.
 *
 * Link with the library (or preload it) and include this header after mpi.h and cuda_runtime.h.
 *
 * Streams. The blocking MPI collectives the library takes (MPI_Allreduce, MPI_Bcast, MPI_Reduce,
 * MPI_Allgather, MPI_Reduce_scatter_block, MPI_Reduce_scatter on device buffers) run their kernel
 * on a stream and return once the result is in the buffer, as MPI's semantics require. By default
 * the stream is CUDA's legacy default stream, which starts only after the work every blocking
 * stream of the device has queued before it: the order a CUDA-aware MPI gives (work on streams
 * created with cudaStreamNonBlocking must be synchronized by the program before the call, as
 * CUDA-aware MPIs require). A program hands over its own stream with hpcolls_set_stream (one
 * communicator) or hpcolls_set_default_stream (every communicator without its own): the call is
 * then ordered after that stream's earlier work only, and the host waits for that stream alone.
 *
 * Enqueued collectives. hpcolls_<collective>_enqueue(..., comm, stream) queues the collective on
 * `stream` and returns without waiting (as MPICH's MPIX_*_enqueue do): the result is in the
 * buffer when the stream reaches that point; such calls can be captured into a CUDA graph and
 * replayed (the kernels keep their epochs on the device). Every rank of `comm` must enqueue the
 * same collectives in the same order. They take only what the native kernels carry whole (device
 * buffers, predefined types and ops, ranks on one node reaching each other's memory, a message
 * the kernels take in one call); anything else returns an MPI error through the communicator's
 * error handler, as does a communicator whose native set-up failed. The first device call on a
 * communicator (blocking or enqueued) sets it up, collectively, and must not be made while the
 * stream is being captured.
 *
 * The device API (hpcolls/device/comm.h and collectives.cuh, docs/DEVICE_API.md): a program's own
 * kernel calls hpcolls::device::allreduce / broadcast / allgather on the struct
 * hpcolls_device_comm fills for a communicator, interleaved with its MPI collectives on device
 * buffers in one order on every rank. The first call on a communicator sets it up, as its first
 * device collective would (collective; not while capturing).
 *
 * Errors: MPI_SUCCESS, or an MPI error code (its string says what happened) after the
 * communicator's error handler was called; a peer that never arrives makes the kernels give up
 * after HPCOLLS_TIMEOUT seconds and every later call on that communicator fails.
 */
#ifndef HPCOLLS_PMPI_H
#define HPCOLLS_PMPI_H

#include <cuda_runtime.h>
#include <mpi.h>

#include "hpcolls/device/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

int hpcolls_set_stream(MPI_Comm comm, cudaStream_t stream);
int hpcolls_set_default_stream(cudaStream_t stream);

int hpcolls_allreduce_enqueue(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, cudaStream_t stream);
int hpcolls_bcast_enqueue(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                          cudaStream_t stream);
int hpcolls_reduce_enqueue(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                           int root, MPI_Comm comm, cudaStream_t stream);
int hpcolls_allgather_enqueue(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, cudaStream_t stream);
int hpcolls_reduce_scatter_block_enqueue(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                                         MPI_Op op, MPI_Comm comm, cudaStream_t stream);
int hpcolls_reduce_scatter_enqueue(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, cudaStream_t stream);

/* Fills *out with `comm`'s device struct on this rank (the current CUDA device's); an MPI error when
 * the native path is off on this communicator (the message says why) or a time-out was seen. */
int hpcolls_device_comm(MPI_Comm comm, hpcolls_device_comm_t* out);

#ifdef __cplusplus
}
#endif

#endif /* HPCOLLS_PMPI_H */
