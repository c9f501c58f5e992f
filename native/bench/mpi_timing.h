// Timing for the MPI benchmark programs of native/bench: every rank times at once, each batch
// counts at its slowest rank, and the median of the batches is the result.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <vector>

namespace hpcolls::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per call: `calls` calls to warm (and do any first call's set-up), then `batches` batches
// of `calls` calls, each batch's time the slowest rank's; the median batch.
template <class Call>
double per_call(int batches, int calls, Call call) {
  for (int i = 0; i < calls; ++i) call();
  std::vector<double> t;
  for (int b = 0; b < batches; ++b) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < calls; ++i) call();
    double dt = (MPI_Wtime() - t0) / calls, slowest = 0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t.push_back(slowest);
  }
  return median(t);
}

}  // namespace hpcolls::bench
