// What CUDA this process can see, without ever failing: used by gpu_available(), `info`, and to
// turn "no driver" / "no device" into one clear NoDeviceError before any other CUDA call.
#pragma once
#include <string>
#include <vector>

namespace hpcolls {

int device_count();                 // 0 when there is no driver or no device
std::string no_device_reason();     // empty when a device is visible
void require_device();              // throws NoDeviceError("no CUDA device visible: ...")
int runtime_version();              // the statically linked CUDA runtime, e.g. 13000
int driver_version();               // 0 when no driver is installed

struct DeviceInfo {
  int index;
  std::string name;
  std::string pci_bus_id;
  std::string uuid;
  int sm_count;
  size_t total_memory;
  int cc_major, cc_minor;
};
DeviceInfo device_info(int device);

}  // namespace hpcolls
