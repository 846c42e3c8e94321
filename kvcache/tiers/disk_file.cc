#include "kvcache/tiers/disk_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"

namespace tandem::kvcache {
namespace {

std::string errnoText(int err) { return std::strerror(err); }

absl::Status errnoStatus(int err, absl::string_view what) {
  std::string msg = absl::StrCat(what, ": ", errnoText(err));
  if (err == ENOSPC || err == EFBIG || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  return absl::UnavailableError(msg);
}

// opens `path` read-write (created 0644), then locks it, retrying while
// another holds the lock until `lock_wait` has passed; -1 (open failed) or
// -2 (locked) with *err set on failure.
int openLocked(const std::string& path, bool direct, absl::Duration lock_wait, int* err) {
  const int flags = O_RDWR | O_CREAT | O_CLOEXEC | (direct ? O_DIRECT : 0);
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  const absl::Time deadline = absl::Now() + lock_wait;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *err = errno;
    if (*err != EWOULDBLOCK || absl::Now() >= deadline) {
      ::close(fd);
      return -2;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return fd;
}

// a 4 KiB aligned read at offset 0: where O_DIRECT is accepted at open but
// refused at I/O (alignment rules, some FUSE), this is where it shows.
int probeDirectRead(int fd) {
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, 4096) != 0) return ENOMEM;
  const ssize_t n = pread(fd, buf, 4096, 0);
  const int err = n < 0 ? errno : 0;
  std::free(buf);
  return err;
}

}  // namespace

DiskFile::DiskFile(DiskFile&& other) noexcept { *this = std::move(other); }

DiskFile& DiskFile::operator=(DiskFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      flock(fd_, LOCK_UN);
      ::close(fd_);
    }
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    direct_ = other.direct_;
    direct_refusal_ = std::move(other.direct_refusal_);
    size_at_open_ = other.size_at_open_;
    sparse_ = other.sparse_;
  }
  return *this;
}

DiskFile::~DiskFile() {
  if (fd_ < 0) return;
  // unlock explicitly: a ring that registered this file may hold the open
  // file (and with it the lock) a while after close.
  flock(fd_, LOCK_UN);
  ::close(fd_);
}

absl::StatusOr<DiskFile> DiskFile::open(const std::string& dir, const std::string& name,
                                        uint64_t bytes, bool want_direct,
                                        absl::Duration lock_wait) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  DiskFile f;
  f.path_ = (std::filesystem::path(dir) / name).string();
  int err = 0;
  bool direct = want_direct;
  int fd = openLocked(f.path_, direct, lock_wait, &err);
  if (fd == -1 && direct && err == EINVAL) {
    f.direct_refusal_ = absl::StrCat("open with O_DIRECT: ", errnoText(err));
    direct = false;
    fd = openLocked(f.path_, direct, lock_wait, &err);
  }
  if (fd == -2) {
    return absl::UnavailableError(
        absl::StrCat(f.path_, " is locked by another process (", errnoText(err), ")"));
  }
  if (fd < 0) return errnoStatus(err, absl::StrCat("cannot open ", f.path_));
  f.fd_ = fd;

  struct stat st {};
  if (fstat(fd, &st) != 0) return errnoStatus(errno, absl::StrCat("cannot stat ", f.path_));
  f.size_at_open_ = static_cast<uint64_t>(st.st_size);
  if (f.size_at_open_ > bytes && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    return errnoStatus(errno, absl::StrCat("cannot shrink ", f.path_));
  }
  if (fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    if (e != EOPNOTSUPP) {
      return errnoStatus(e, absl::StrCat("cannot preallocate ", bytes, " bytes for ", f.path_));
    }
    f.sparse_ = true;
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      return errnoStatus(errno, absl::StrCat("cannot size ", f.path_));
    }
  }
  if (direct) {
    const int e = probeDirectRead(fd);
    if (e == EINVAL) {
      f.direct_refusal_ = absl::StrCat("aligned O_DIRECT read: ", errnoText(e));
      direct = false;
      ::close(f.fd_);
      f.fd_ = openLocked(f.path_, false, lock_wait, &err);
      if (f.fd_ < 0) return errnoStatus(err, absl::StrCat("cannot reopen ", f.path_));
    } else if (e != 0) {
      return errnoStatus(e, absl::StrCat("cannot read ", f.path_));
    }
  }
  f.direct_ = direct;
  return f;
}

}  // namespace tandem::kvcache
