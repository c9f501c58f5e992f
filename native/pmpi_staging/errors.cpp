#include "errors.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "libmpi.h"
#include "mpi_opaque.h"

namespace hpcolls_pmpi {

int error_code(const char* what) {
  static std::mutex registering;
  static std::map<std::string, int> codes;
  std::string message = std::string("hpcolls PMPI staging: ") + what;
  std::lock_guard<std::mutex> lock(registering);
  auto known = codes.find(message);
  if (known != codes.end()) return known->second;
  auto add_class = next<int (*)(int*)>("PMPI_Add_error_class");
  auto add_code = next<int (*)(int, int*)>("PMPI_Add_error_code");
  auto add_string = next<int (*)(int, const char*)>("PMPI_Add_error_string");
  int error_class = 0, code = 0;
  if (add_class == nullptr || add_code == nullptr || add_string == nullptr || add_class(&error_class) != kSuccess ||
      add_code(error_class, &code) != kSuccess || add_string(code, message.c_str()) != kSuccess) {
    std::fprintf(stderr, "%s (and the MPI library could not register it as an error)\n", message.c_str());
    std::abort();
  }
  codes.emplace(message, code);
  return code;
}

int error_codef(const char* format, ...) {
  char what[230];  // Open MPI keeps 256 characters of an error string (MPI_MAX_ERROR_STRING)
  va_list args;
  va_start(args, format);
  std::vsnprintf(what, sizeof what, format, args);
  va_end(args);
  return error_code(what);
}

}  // namespace hpcolls_pmpi
