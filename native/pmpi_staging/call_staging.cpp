#include "call_staging.h"

#include <algorithm>
#include <new>

#include "cuda_aware.h"
#include "errors.h"
#include "libmpi.h"

namespace hpcolls_pmpi {
namespace {

// The buffer as MPI would use it: host memory (or a CUDA-aware MPI) means nothing to stage.
DeviceBuffer needs_staging(const void* buf) {
  if (buf == nullptr || mpi_is_cuda_aware()) return {};
  return locate(buf);
}

}  // namespace

int CallStaging::typed(const void* buf, long long count, Handle datatype, Access access, void** out) {
  *out = const_cast<void*>(buf);
  DeviceBuffer where = needs_staging(buf);
  if (!where.on_device || count <= 0) return kSuccess;
  using Extent = int (*)(Handle, Aint*, Aint*);
  static const auto get_extent = next<Extent>("PMPI_Type_get_extent");
  static const auto get_true_extent = next<Extent>("PMPI_Type_get_true_extent");
  if (get_extent == nullptr || get_true_extent == nullptr)
    return error_codef("%s: the MPI library has no PMPI_Type_get_(true_)extent", function_);
  Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  int err = get_extent(datatype, &lb, &extent);
  if (err == kSuccess) err = get_true_extent(datatype, &true_lb, &true_extent);
  if (err != kSuccess) return err;  // MPI's own error for a bad datatype, as the call would give
  // Element i occupies [true_lb + i * extent, true_lb + i * extent + true_extent); extents may be
  // negative (resized types), so the span runs from the lowest element to the highest.
  Aint step = static_cast<Aint>(count - 1) * extent;
  Aint lo = true_lb + std::min<Aint>(0, step);
  Aint hi = true_lb + true_extent + std::max<Aint>(0, step);
  if (hi <= lo) return kSuccess;
  return stage(buf, lo, static_cast<std::size_t>(hi - lo), where, access, out);
}

int CallStaging::bytes(const void* buf, Aint first, Aint end, Access access, void** out) {
  *out = const_cast<void*>(buf);
  DeviceBuffer where = needs_staging(buf);
  if (!where.on_device || end <= first || first < 0) return kSuccess;  // MPI judges bad positions itself
  return stage(buf, first, static_cast<std::size_t>(end - first), where, access, out);
}

int CallStaging::stage(const void* buf, Aint lo, std::size_t length, const DeviceBuffer& where, Access access,
                       void** out) {
  Staged s{const_cast<char*>(static_cast<const char*>(buf)) + lo, std::unique_ptr<char[]>(new (std::nothrow) char[length]),
           length, where, access == Access::write};
  if (!s.host) return error_codef("%s: no host memory for a %zu-byte staging copy", function_, length);
  int cuda = copy_to_host(s.host.get(), s.device, length, where);
  if (cuda != 0)
    return error_codef("%s: copying %zu bytes of a device buffer to host memory failed (CUDA error %d)", function_,
                       length, cuda);
  // MPI adds the offsets back (lo > 0 points before the copy: only offsets >= lo are used).
  *out = s.host.get() - lo;
  staged_.push_back(std::move(s));
  return kSuccess;
}

int CallStaging::finish(int mpi_result) {
  if (mpi_result != kSuccess) return mpi_result;
  for (Staged& s : staged_) {
    if (!s.written) continue;
    int cuda = copy_to_device(s.device, s.host.get(), s.length, s.where);
    if (cuda != 0)
      return error_codef("%s: copying %zu bytes back to the device buffer failed (CUDA error %d)", function_,
                         s.length, cuda);
  }
  return mpi_result;
}

}  // namespace hpcolls_pmpi
