/* What the PMPI library adds to a call on host buffers: an 8-byte MPI_Allreduce (MPI_DOUBLE,
 * MPI_SUM) on host memory, timed in batches, the median batch's time per call printed in ns.
 * run.sh runs it with and without the library (LD_PRELOAD) at 1 and 2 ranks, alternating, and
 * prints the difference; the target is <= 50 ns per call (issue #47).
 *
 *   mpicc -O2 -o host_overhead host_overhead.c && mpiexec -n 1 ./host_overhead [batches] [calls]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int batches = argc > 1 ? atoi(argv[1]) : 101, calls = argc > 2 ? atoi(argv[2]) : 2000, rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double in = 1.0, out = 0.0;
  double* per_call = malloc(sizeof(double) * batches);
  for (int i = 0; i < calls; ++i) MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);  /* warm */
  for (int b = 0; b < batches; ++b) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ns();
    for (int i = 0; i < calls; ++i) MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    per_call[b] = (now_ns() - t0) / calls;
  }
  qsort(per_call, batches, sizeof(double), by_value);
  if (rank == 0) printf("%.1f\n", per_call[batches / 2]);
  free(per_call);
  MPI_Finalize();
  return 0;
}
