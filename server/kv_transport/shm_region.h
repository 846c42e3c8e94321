// A shared-memory region for D's KV storage: a memfd both D and the prefill
// workers on its host map, so P copies blocks straight into D's blocks. The
// fd travels to P over a unix socket (SCM_RIGHTS); nothing is left in
// /dev/shm when the processes exit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace tandem::kv_transport {

class ShmRegion;
using ShmRegionPtr = std::shared_ptr<ShmRegion>;

class ShmRegion {
 public:
  // a new zero-filled region of `bytes` bytes (a memfd sealed against
  // shrinking and growing), mapped read-write. ResourceExhausted / Internal
  // when the kernel refuses.
  static absl::StatusOr<ShmRegionPtr> create(size_t bytes);
  // maps `bytes` bytes of a region another process shared. Takes `fd` and
  // closes it once mapped (the mapping keeps the memory). InvalidArgument
  // when the region is smaller than `bytes` or not sealed against resizing
  // (its owner could shrink it under our mapping).
  static absl::StatusOr<ShmRegionPtr> map(int fd, size_t bytes);
  // unmaps (and closes the fd of a created region).
  ~ShmRegion();
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // the memfd of a created region (to share it); -1 for a mapped one.
  int fd() const { return fd_; }
  // a random id naming this region, so senders can reuse their mapping.
  uint64_t id() const { return id_; }

 private:
  ShmRegion(void* data, size_t bytes, int fd, uint64_t id)
      : data_(data), bytes_(bytes), fd_(fd), id_(id) {}

  void* data_;
  size_t bytes_;
  int fd_;
  uint64_t id_;
};

// a random 64-bit value from the kernel (for region ids and socket names).
uint64_t randomU64();

}  // namespace tandem::kv_transport
