// DiskIo over one io_uring owned by one thread: the staging buffers and the
// file are registered with the ring (READ_FIXED / WRITE_FIXED on a fixed
// file), submissions queued by any thread are taken in batches (one
// io_uring_submit per wake-up), and completions run on the ring's thread. An
// eventfd read kept armed in the ring wakes the thread for new submissions.
#pragma once

#include <liburing.h>

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "kvcache/tiers/aligned_buffer_pool.h"
#include "kvcache/tiers/disk_io.h"

namespace tandem::kvcache {

class UringDiskIo final : public DiskIo {
 public:
  // sets up a ring of at least `queue_depth` entries on `fd` with the buffers
  // of `pool` (both outlive this). Fails (with the errno text) where io_uring
  // cannot be used: an old kernel, kernel.io_uring_disabled, a seccomp filter.
  // Buffers or the file that cannot be registered (RLIMIT_MEMLOCK on old
  // kernels) are used unregistered; registrationNote() says so.
  static absl::StatusOr<std::unique_ptr<UringDiskIo>> create(int fd, const AlignedBufferPool& pool,
                                                             int queue_depth);
  ~UringDiskIo() override;

  // DiskIo
  std::string_view name() const override { return "uring"; }
  void read(int buffer, size_t len, uint64_t offset, Completion done) override;
  void write(int buffer, size_t len, uint64_t offset, Completion done) override;
  void shutdown() override;

  // "" when buffers and file are registered; otherwise what is not, and why.
  const std::string& registrationNote() const { return registration_note_; }

 private:
  struct Op {
    bool write;
    int buffer;
    size_t len;
    uint64_t offset;
    size_t done_bytes = 0;  // a short transfer resubmits the rest
    Completion done;
  };
  UringDiskIo(int fd, const AlignedBufferPool& pool);
  void submit(std::unique_ptr<Op> op);
  void run();
  void prepare(Op* op);
  void armWake();
  void complete(Op* op, int res);

  const int fd_;
  const AlignedBufferPool& pool_;
  io_uring ring_{};
  bool ring_ready_ = false;
  bool fixed_buffers_ = false;
  bool fixed_file_ = false;
  std::string registration_note_;
  int wake_fd_ = -1;
  uint64_t wake_value_ = 0;  // the armed eventfd read lands here

  std::mutex mu_;
  std::deque<std::unique_ptr<Op>> queue_;
  bool stopping_ = false;
  bool wake_pending_ = false;  // an eventfd write is not yet followed by a drain
  std::thread::id ring_thread_id_;
  int in_flight_ = 0;  // ring thread only
  std::thread thread_;
};

}  // namespace tandem::kvcache
