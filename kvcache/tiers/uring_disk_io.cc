#include "kvcache/tiers/uring_disk_io.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace tandem::kvcache {
namespace {

constexpr uint64_t kWakeTag = 1;  // user_data of the eventfd read (ops are pointers, never 1)

}  // namespace

UringDiskIo::UringDiskIo(int fd, const AlignedBufferPool& pool) : fd_(fd), pool_(pool) {}

absl::StatusOr<std::unique_ptr<UringDiskIo>> UringDiskIo::create(int fd,
                                                                 const AlignedBufferPool& pool,
                                                                 int queue_depth) {
  std::unique_ptr<UringDiskIo> io(new UringDiskIo(fd, pool));
  // one entry more than the ops in flight for the armed wake-up read.
  const int rc = io_uring_queue_init(static_cast<unsigned>(queue_depth) + 1, &io->ring_, 0);
  if (rc < 0) return absl::UnavailableError(std::strerror(-rc));
  io->ring_ready_ = true;

  const std::vector<iovec> iov = pool.iovecs();
  const int rb = io_uring_register_buffers(&io->ring_, iov.data(), static_cast<unsigned>(iov.size()));
  io->fixed_buffers_ = rb == 0;
  if (rb != 0) io->registration_note_ = absl::StrCat("buffers not registered (", std::strerror(-rb), ")");
  const int rf = io_uring_register_files(&io->ring_, &fd, 1);
  io->fixed_file_ = rf == 0;
  if (rf != 0) {
    absl::StrAppend(&io->registration_note_, io->registration_note_.empty() ? "" : ", ",
                    "file not registered (", std::strerror(-rf), ")");
  }

  io->wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (io->wake_fd_ < 0) return absl::UnavailableError(absl::StrCat("eventfd: ", std::strerror(errno)));
  io->armWake();
  const int sub = io_uring_submit(&io->ring_);
  if (sub < 0) return absl::UnavailableError(absl::StrCat("io_uring_submit: ", std::strerror(-sub)));
  {
    std::lock_guard lock(io->mu_);
    io->thread_ = std::thread([p = io.get()] { p->run(); });
    io->ring_thread_id_ = io->thread_.get_id();
  }
  return io;
}

UringDiskIo::~UringDiskIo() {
  shutdown();
  if (ring_ready_) io_uring_queue_exit(&ring_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void UringDiskIo::read(int buffer, size_t len, uint64_t offset, Completion done) {
  submit(std::make_unique<Op>(Op{false, buffer, len, offset, 0, std::move(done)}));
}

void UringDiskIo::write(int buffer, size_t len, uint64_t offset, Completion done) {
  submit(std::make_unique<Op>(Op{true, buffer, len, offset, 0, std::move(done)}));
}

void UringDiskIo::submit(std::unique_ptr<Op> op) {
  bool wake;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(op));
    // the ring thread drains the queue after every wake-up and after running
    // completions, so only the first op queued while it sleeps needs a write
    // to the eventfd (a syscall), and ops queued by completions need none.
    wake = !wake_pending_ && std::this_thread::get_id() != ring_thread_id_;
    if (wake) wake_pending_ = true;
  }
  if (wake) {
    const uint64_t one = 1;
    TANDEM_CHECK(::write(wake_fd_, &one, sizeof(one)) == sizeof(one));
  }
}

void UringDiskIo::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  TANDEM_CHECK(::write(wake_fd_, &one, sizeof(one)) == sizeof(one));
  thread_.join();
}

void UringDiskIo::armWake() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  TANDEM_CHECK(sqe != nullptr);
  io_uring_prep_read(sqe, wake_fd_, &wake_value_, sizeof(wake_value_), 0);
  io_uring_sqe_set_data64(sqe, kWakeTag);
}

void UringDiskIo::prepare(Op* op) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  // the caller keeps at most one op per buffer in flight, and the ring has an
  // entry for each plus the wake-up read.
  TANDEM_CHECK(sqe != nullptr);
  std::byte* buf = pool_.buffer(op->buffer).data() + op->done_bytes;
  const unsigned len = static_cast<unsigned>(op->len - op->done_bytes);
  const uint64_t offset = op->offset + op->done_bytes;
  const int fd = fixed_file_ ? 0 : fd_;
  if (fixed_buffers_) {
    if (op->write) {
      io_uring_prep_write_fixed(sqe, fd, buf, len, offset, op->buffer);
    } else {
      io_uring_prep_read_fixed(sqe, fd, buf, len, offset, op->buffer);
    }
  } else if (op->write) {
    io_uring_prep_write(sqe, fd, buf, len, offset);
  } else {
    io_uring_prep_read(sqe, fd, buf, len, offset);
  }
  if (fixed_file_) sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data(sqe, op);
  ++in_flight_;
}

void UringDiskIo::complete(Op* op, int res) {
  --in_flight_;
  if (res > 0) {
    op->done_bytes += static_cast<size_t>(res);
    if (op->done_bytes < op->len) {  // short: the rest goes in the next batch
      prepare(op);
      return;
    }
  }
  std::unique_ptr<Op> owned(op);
  int64_t result = static_cast<int64_t>(op->done_bytes);
  if (res < 0) result = res;
  if (res == 0 && op->write) result = -EIO;  // a write that moves nothing cannot finish
  owned->done(result);
}

void UringDiskIo::run() {
  bool wake_armed = true;
  std::vector<std::pair<Op*, int>> done;
  for (;;) {
    std::deque<std::unique_ptr<Op>> batch;
    bool stopping;
    {
      std::lock_guard lock(mu_);
      batch.swap(queue_);
      wake_pending_ = false;
      stopping = stopping_;
    }
    for (auto& op : batch) prepare(op.release());
    if (!wake_armed) {
      armWake();
      wake_armed = true;
    }
    if (stopping && batch.empty() && in_flight_ == 0) break;
    // one syscall submits the whole batch (and a re-armed wake-up read) and
    // waits for the first completion.
    int rc;
    do {
      rc = io_uring_submit_and_wait(&ring_, 1);
    } while (rc == -EINTR || rc == -EAGAIN || rc == -EBUSY);
    TANDEM_CHECK(rc >= 0);
    // reap everything that is ready, not just the first.
    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe = nullptr;
    done.clear();
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      if (io_uring_cqe_get_data64(cqe) == kWakeTag) {
        wake_armed = false;
      } else {
        done.emplace_back(static_cast<Op*>(io_uring_cqe_get_data(cqe)), cqe->res);
      }
    }
    io_uring_cq_advance(&ring_, seen);
    for (auto [op, res] : done) complete(op, res);
  }
}

}  // namespace tandem::kvcache
