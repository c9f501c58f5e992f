// Has the process loaded a shared object since the last look? Asked on every interposed MPI call
// of a process without the CUDA driver, so the answer costs two memory loads (device_memory.h).
#pragma once

namespace hpcolls_pmpi {
namespace detail {

// True when an object was loaded after the last rescan(): the dynamic linker appends every object
// it loads to the end of its list, so the list's tail has a successor then.
bool loaded_objects_changed();

// Takes the list's current tail as the new point of comparison (holding a reference to it, so that
// it cannot be unloaded and its entry freed while it is watched). Calls to it are serialized by
// the caller.
void rescan_loaded_objects();

}  // namespace detail
}  // namespace hpcolls_pmpi
