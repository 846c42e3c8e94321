// The preallocated file that holds G3's records: created (with its directory)
// when missing, locked against a second process, sized with fallocate so a
// full disk shows at start rather than mid-write, and opened with O_DIRECT
// unless the file system refuses it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tandem::kvcache {

class DiskFile {
 public:
  DiskFile() = default;
  DiskFile(DiskFile&& other) noexcept;
  DiskFile& operator=(DiskFile&& other) noexcept;
  ~DiskFile();

  // creates `dir` (and its parents) if missing, opens or creates dir/name,
  // takes an exclusive flock on it, and makes it exactly `bytes` long:
  // fallocate (a file system without it: ftruncate, sparse), a longer file is
  // cut. With want_direct it opens with O_DIRECT and checks a 4 KiB aligned
  // read works; EINVAL at either step reopens buffered (direct() false,
  // directRefusal() says why). Errors (Unavailable/ResourceExhausted/...):
  // the directory cannot be made, the file cannot be opened, another process
  // holds it, or the space cannot be reserved (ENOSPC, EFBIG).
  // A lock held by another waits up to `lock_wait` for it: a process killed
  // while an io_uring had the file registered keeps the open file, and with
  // it the lock, until the kernel tears the ring down, a little after exit.
  static absl::StatusOr<DiskFile> open(const std::string& dir, const std::string& name,
                                       uint64_t bytes, bool want_direct,
                                       absl::Duration lock_wait = absl::ZeroDuration());

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool direct() const { return direct_; }
  // why O_DIRECT was refused ("" when it was not asked for or works).
  const std::string& directRefusal() const { return direct_refusal_; }
  // the file's length before open() sized it (records past it are torn).
  uint64_t sizeAtOpen() const { return size_at_open_; }
  // fallocate was not supported: the file is sparse, writes may hit ENOSPC.
  bool sparse() const { return sparse_; }

 private:
  int fd_ = -1;
  std::string path_;
  bool direct_ = false;
  std::string direct_refusal_;
  uint64_t size_at_open_ = 0;
  bool sparse_ = false;
};

}  // namespace tandem::kvcache
