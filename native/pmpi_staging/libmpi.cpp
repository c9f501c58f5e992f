// Finding the MPI library. mpi4py opens libmpi privately (RTLD_LOCAL), so its symbols are not in
// the global scope and dlsym(RTLD_NEXT, ...) does not see them; a C program linked against libmpi
// has it in the global scope instead. Both cases: the first loaded object (the global scope first,
// then every object the dynamic linker lists) that defines PMPI_Get_version is the MPI library,
// and every later lookup goes to it.
#include "libmpi.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <string>
#include <vector>

namespace hpcolls_pmpi {
namespace {

constexpr const char* kProbe = "PMPI_Get_version";

struct Found {
  void* handle = nullptr;
  std::string path;
};

std::vector<std::string> loaded_object_names() {
  std::vector<std::string> names;
  // Names are collected first and opened afterwards: dlopen inside the callback would run while
  // the dynamic linker holds its list lock.
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) -> int {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
          static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
        return 0;
      },
      &names);
  return names;
}

Found* find_libmpi() {
  Dl_info where{};
  void* global = dlsym(RTLD_DEFAULT, kProbe);
  if (global != nullptr && dladdr(global, &where) != 0 && where.dli_fname != nullptr) {
    if (void* handle = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD))
      return new Found{handle, where.dli_fname};
  }
  for (const std::string& name : loaded_object_names()) {
    void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    // dlsym on a handle also searches that object's dependencies: report the object that
    // actually defines the symbol.
    void* sym = dlsym(handle, kProbe);
    if (sym != nullptr && dladdr(sym, &where) != 0 && where.dli_fname != nullptr) {
      void* owner = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
      dlclose(handle);
      if (owner != nullptr) return new Found{owner, where.dli_fname};
      continue;
    }
    dlclose(handle);
  }
  return nullptr;
}

// Found once and kept (the handles stay open); not found is not remembered, since the library
// may be asked before MPI is loaded.
std::atomic<Found*> g_libmpi{nullptr};

Found* libmpi() {
  Found* found = g_libmpi.load(std::memory_order_acquire);
  if (found != nullptr) return found;
  found = find_libmpi();
  if (found == nullptr) return nullptr;
  Found* expected = nullptr;
  if (!g_libmpi.compare_exchange_strong(expected, found)) {
    dlclose(found->handle);
    delete found;
    return expected;
  }
  return found;
}

// Marks this library's own object (its address is inside it).
char g_this_object;

}  // namespace

void* next_definition(const char* name) {
  if (void* next = dlsym(RTLD_NEXT, name)) return next;
  Dl_info self{};
  if (dladdr(&g_this_object, &self) == 0) return nullptr;
  for (const std::string& object : loaded_object_names()) {
    void* handle = dlopen(object.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* sym = dlsym(handle, name);
    Dl_info where{};
    const bool elsewhere = sym != nullptr && dladdr(sym, &where) != 0 && where.dli_fbase != self.dli_fbase;
    dlclose(handle);  // the object stays loaded: it was loaded before this NOLOAD reference
    if (elsewhere) return sym;
  }
  return nullptr;
}

void* libmpi_symbol(const char* name) {
  Found* found = libmpi();
  return found != nullptr ? dlsym(found->handle, name) : nullptr;
}

void* libmpi_object(const char* name) {
  if (libmpi() == nullptr) return nullptr;
  if (void* bound = dlsym(RTLD_DEFAULT, name)) return bound;
  return libmpi_symbol(name);
}

const char* libmpi_path() {
  Found* found = libmpi();
  return found != nullptr ? found->path.c_str() : "";
}

int libmpi_has(const char* name) {
  if (libmpi() == nullptr || name == nullptr) return -1;
  return libmpi_symbol(name) != nullptr ? 1 : 0;
}

}  // namespace hpcolls_pmpi

// Whether the loaded MPI library has a function: mpi4py raises NotImplementedError for a call whose
// function its library lacks (Open MPI 4.1: MPI-4's persistent collectives, partitioned calls,
// MPI_Isendrecv), and the staged route raises the same for those rather than its own error.
extern "C" __attribute__((visibility("default"))) int hpcolls_mpi_has(const char* name) {
  return hpcolls_pmpi::libmpi_has(name);
}
