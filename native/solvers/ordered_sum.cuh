// The last step of a two-level reduction in shared memory: groups of threads each left a partial
// sum per column in their own row, and one thread per column adds the rows in row order. A fixed
// order makes the result bitwise reproducible from run to run and identical on every rank.
#pragma once

namespace solvers {

template <typename T, int kRows, int kCols>
__device__ inline T sum_rows_in_order(const T (&rows)[kRows][kCols], int col) {
  T total = 0;
#pragma unroll
  for (int r = 0; r < kRows; ++r) total += rows[r][col];
  return total;
}

}  // namespace solvers
