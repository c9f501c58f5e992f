// The device buffers of one MPI call, staged through host memory.
//
// Each buffer argument is offered once, before the call: host memory (or any buffer, when the MPI
// library is CUDA-aware) comes back unchanged; device memory comes back as a host copy of the
// bytes MPI may touch. After the call, finish() copies the host copies of the buffers MPI writes
// back to the device. Every staged buffer is copied in, written ones too: MPI changes only the
// bytes a call defines (a receive shorter than its buffer, a datatype with gaps), and the rest
// must come back as it was.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "device_memory.h"
#include "mpi_opaque.h"

namespace hpcolls_pmpi {

enum class Access { read, write };

class CallStaging {
 public:
  explicit CallStaging(const char* function) : function_(function) {}

  // count elements of datatype at buf. *out: the pointer to give MPI. Returns MPI_SUCCESS or an
  // hpcolls error code (the call must then not be made).
  int typed(const void* buf, long long count, Handle datatype, Access access, void** out);
  // The bytes [first, end) of a packed buffer at buf (MPI addresses them from buf).
  int bytes(const void* buf, Aint first, Aint end, Access access, void** out);

  bool staged_any() const { return !staged_.empty(); }

  // After the MPI call that returned mpi_result: the written buffers copied back when it
  // succeeded. Returns mpi_result, or an error code when a copy failed.
  int finish(int mpi_result);

 private:
  struct Staged {
    char* device;        // the first byte MPI may touch
    std::unique_ptr<char[]> host;
    std::size_t length;
    DeviceBuffer where;
    bool written;
  };
  // [device + lo, device + lo + length) staged; *out = host copy - lo.
  int stage(const void* buf, Aint lo, std::size_t length, const DeviceBuffer& where, Access access, void** out);

  const char* function_;
  std::vector<Staged> staged_;
};

}  // namespace hpcolls_pmpi
