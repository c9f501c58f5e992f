// Per-communicator LL scratch: one device allocation per rank, exported with CUDA IPC and opened
// by every peer, so each rank can store straight into every other rank's scratch.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace hpcolls {

class PeerScratch {
 public:
  PeerScratch(int device, size_t bytes);  // allocates and zeroes (flag 0 is never a live epoch)
  ~PeerScratch();
  PeerScratch(const PeerScratch&) = delete;
  PeerScratch& operator=(const PeerScratch&) = delete;

  // cudaIpcMemHandle_t of our allocation followed by our offset inside it (size_t): kHandleBytes.
  static const size_t kHandleBytes;
  std::string export_handle() const;
  // Opens every peer's handle (handles[r] from rank r); our own entry is our allocation.
  void open_peers(const std::vector<std::string>& handles, int self);
  // Rank `rank`'s allocation as we address it (after open_peers); -1: our own, at any time.
  void* base(int rank) const { return rank < 0 ? local_ : bases_.at(size_t(rank)); }
  size_t bytes() const { return bytes_; }
  void release();  // closes peer mappings and frees our allocation; idempotent

 private:
  int device_;
  size_t bytes_;
  void* local_ = nullptr;
  std::vector<void*> bases_;   // each rank's scratch as we address it
  std::vector<void*> mapped_;  // what cudaIpcOpenMemHandle returned (to close it); null for us
};

}  // namespace hpcolls
