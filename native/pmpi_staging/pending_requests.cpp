#include "pending_requests.h"

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "mpi_abi.h"

namespace hpcolls_pmpi {
namespace detail {
std::atomic<int> g_pending_requests{0};
}  // namespace detail

namespace {
std::mutex g_lock;
std::unordered_map<std::uintptr_t, std::unique_ptr<CallStaging>>& pending() {
  static auto* table = new std::unordered_map<std::uintptr_t, std::unique_ptr<CallStaging>>();
  return *table;  // never destroyed: a completion may run during the process's exit
}
}  // namespace

std::uintptr_t request_at(const void* requests, int i) {
  const MpiAbi* abi = mpi_abi();
  if (abi != nullptr && abi->request_bytes == int(sizeof(unsigned))) {
    unsigned v = 0;
    std::memcpy(&v, static_cast<const char*>(requests) + std::size_t(i) * sizeof v, sizeof v);
    return v;
  }
  std::uintptr_t v = 0;
  std::memcpy(&v, static_cast<const char*>(requests) + std::size_t(i) * sizeof v, sizeof v);
  return v;
}

void keep_until_complete(const void* request, std::unique_ptr<CallStaging> staging) {
  std::lock_guard<std::mutex> lock(g_lock);
  pending()[request_at(request, 0)] = std::move(staging);
  detail::g_pending_requests.store(int(pending().size()), std::memory_order_relaxed);
}

int finish_completed(const std::vector<std::uintptr_t>& before, const void* requests, int n) {
  const MpiAbi* abi = mpi_abi();
  if (abi == nullptr) return kSuccess;
  const std::uintptr_t null = abi->request_bytes == int(sizeof(unsigned))
                                  ? std::uintptr_t(unsigned(reinterpret_cast<std::uintptr_t>(abi->request_null)))
                                  : reinterpret_cast<std::uintptr_t>(abi->request_null);
  int result = kSuccess;
  std::lock_guard<std::mutex> lock(g_lock);
  for (int i = 0; i < n; ++i) {
    if (before[std::size_t(i)] == null || request_at(requests, i) != null) continue;
    auto it = pending().find(before[std::size_t(i)]);
    if (it == pending().end()) continue;
    const int err = it->second->finish(kSuccess);
    if (result == kSuccess) result = err;
    pending().erase(it);
  }
  detail::g_pending_requests.store(int(pending().size()), std::memory_order_relaxed);
  return result;
}

}  // namespace hpcolls_pmpi
