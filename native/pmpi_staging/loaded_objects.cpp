#include "loaded_objects.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>

namespace hpcolls_pmpi {
namespace detail {
namespace {

// The watched tail of the dynamic linker's list (_r_debug.r_map, the base namespace, where every
// object of the program, mpi4py's privately opened libmpi and cupy's driver included, is listed).
std::atomic<link_map*> g_tail{nullptr};
void* g_tail_reference = nullptr;

link_map* current_tail() {
  link_map* m = _r_debug.r_map;
  if (m == nullptr) return nullptr;
  while (m->l_next != nullptr) m = m->l_next;
  return m;
}

}  // namespace

bool loaded_objects_changed() {
  link_map* tail = g_tail.load(std::memory_order_acquire);
  return tail == nullptr || tail->l_next != nullptr;
}

void rescan_loaded_objects() {
  link_map* tail = current_tail();
  if (tail == nullptr || tail == g_tail.load(std::memory_order_relaxed)) return;
  // A reference keeps the tail's entry alive while it is read (dlclose would free it); objects
  // without a name to open (the main program, the vDSO) are never unloaded anyway.
  void* reference = tail->l_name != nullptr && tail->l_name[0] != '\0'
                        ? dlopen(tail->l_name, RTLD_LAZY | RTLD_NOLOAD)
                        : nullptr;
  void* previous = g_tail_reference;
  g_tail_reference = reference;
  g_tail.store(tail, std::memory_order_release);
  if (previous != nullptr) dlclose(previous);
}

}  // namespace detail
}  // namespace hpcolls_pmpi
