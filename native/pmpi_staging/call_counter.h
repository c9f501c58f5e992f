// Calls that went through this library's entry points in this process: how a test tells that
// the interposition is in place (hpcolls_pmpi_staging_calls()). A plain load and store, not an
// atomic increment: a host call must cost a few nanoseconds here, and the count is a test's
// (concurrent threads may lose a few).
#pragma once

#include <atomic>

namespace hpcolls_pmpi {

extern std::atomic<unsigned long long> g_calls;

inline void count_call() { g_calls.store(g_calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

}  // namespace hpcolls_pmpi
