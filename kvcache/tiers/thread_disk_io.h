// DiskIo over a small pool of threads doing pread/pwrite (`--kv-disk-io
// threads`, and the fallback where io_uring cannot be set up).
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "kvcache/tiers/aligned_buffer_pool.h"
#include "kvcache/tiers/disk_io.h"

namespace tandem::kvcache {

class ThreadDiskIo final : public DiskIo {
 public:
  // `threads` workers on file `fd` with the buffers of `pool` (both outlive this).
  ThreadDiskIo(int fd, const AlignedBufferPool& pool, int threads);
  ~ThreadDiskIo() override;

  // DiskIo
  std::string_view name() const override { return "threads"; }
  void read(int buffer, size_t len, uint64_t offset, Completion done) override;
  void write(int buffer, size_t len, uint64_t offset, Completion done) override;
  void shutdown() override;

 private:
  struct Op {
    bool write;
    int buffer;
    size_t len;
    uint64_t offset;
    Completion done;
  };
  void submit(Op op);
  void run();
  int64_t perform(const Op& op) const;

  const int fd_;
  const AlignedBufferPool& pool_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  int busy_ = 0;  // ops taken by a worker, not yet completed
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tandem::kvcache
