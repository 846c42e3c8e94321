#include "kvcache/tiers/thread_disk_io.h"

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace tandem::kvcache {

ThreadDiskIo::ThreadDiskIo(int fd, const AlignedBufferPool& pool, int threads)
    : fd_(fd), pool_(pool) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

ThreadDiskIo::~ThreadDiskIo() { shutdown(); }

void ThreadDiskIo::read(int buffer, size_t len, uint64_t offset, Completion done) {
  submit({false, buffer, len, offset, std::move(done)});
}

void ThreadDiskIo::write(int buffer, size_t len, uint64_t offset, Completion done) {
  submit({true, buffer, len, offset, std::move(done)});
}

void ThreadDiskIo::submit(Op op) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(op));
  }
  cv_.notify_one();
}

void ThreadDiskIo::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadDiskIo::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    // stop only once nothing is queued or running: a running completion may
    // still queue more.
    cv_.wait(lock, [&] { return !queue_.empty() || (stopping_ && busy_ == 0); });
    if (queue_.empty()) {
      cv_.notify_all();
      return;
    }
    Op op = std::move(queue_.front());
    queue_.pop_front();
    ++busy_;
    lock.unlock();
    const int64_t result = perform(op);
    op.done(result);
    lock.lock();
    --busy_;
    if (stopping_ && busy_ == 0) cv_.notify_all();
  }
}

int64_t ThreadDiskIo::perform(const Op& op) const {
  std::byte* buf = pool_.buffer(op.buffer).data();
  size_t done = 0;
  while (done < op.len) {
    const off_t at = static_cast<off_t>(op.offset + done);
    const ssize_t n = op.write ? pwrite(fd_, buf + done, op.len - done, at)
                               : pread(fd_, buf + done, op.len - done, at);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) {
      if (op.write) return -EIO;
      break;  // end of file
    }
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(done);
}

}  // namespace tandem::kvcache
