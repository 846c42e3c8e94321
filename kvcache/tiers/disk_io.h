// The I/O engine under the disk tier: positioned reads and writes of one file
// between the file and the staging buffers of an AlignedBufferPool, named by
// index. Two implementations: io_uring (uring_disk_io.h) and a pread/pwrite
// thread pool (thread_disk_io.h).
//
// Contract: read()/write() never block on the device and never call `done`
// inline; `done` runs exactly once, on one of the engine's threads, with the
// bytes moved (all of `len` unless an error or the end of the file came
// first) or -errno. Completions may submit more I/O. The caller bounds what
// is in flight (at most one op per buffer). Offsets, lengths and buffers are
// 4 KiB aligned (the file may be O_DIRECT).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace tandem::kvcache {

class DiskIo {
 public:
  using Completion = std::function<void(int64_t result)>;

  virtual ~DiskIo() = default;
  // "uring" or "threads".
  virtual std::string_view name() const = 0;
  // reads `len` bytes at file `offset` into the start of buffer `buffer`.
  virtual void read(int buffer, size_t len, uint64_t offset, Completion done) = 0;
  // writes the first `len` bytes of buffer `buffer` at file `offset`.
  virtual void write(int buffer, size_t len, uint64_t offset, Completion done) = 0;
  // waits until every submitted op (and any op their completions submit) has
  // completed, then stops the engine's threads. Further calls are no-ops.
  virtual void shutdown() = 0;
};

}  // namespace tandem::kvcache
