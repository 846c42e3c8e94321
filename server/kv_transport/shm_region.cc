#include "server/kv_transport/shm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tandem::kv_transport {
namespace {

constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW;

}  // namespace

uint64_t randomU64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), 0) != sizeof(v)) v = static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ULL;
  return v;
}

absl::StatusOr<ShmRegionPtr> ShmRegion::create(size_t bytes) {
  if (bytes == 0) return absl::InvalidArgumentError("empty shared-memory region");
  int fd = memfd_create("tandem-kv", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return absl::InternalError(absl::StrCat("memfd_create: ", std::strerror(errno)));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot size a ", bytes, "-byte shared region: ", std::strerror(err)));
  }
  // its size is final: a peer it is shared with can neither shrink it
  // (which would make our accesses SIGBUS) nor grow it.
  if (fcntl(fd, F_ADD_SEALS, kSizeSeals) != 0) {
    int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("sealing the shared region: ", std::strerror(err)));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close(fd);
    return absl::ResourceExhaustedError(absl::StrCat("mmap: ", std::strerror(err)));
  }
  return ShmRegionPtr(new ShmRegion(p, bytes, fd, randomU64()));
}

absl::StatusOr<ShmRegionPtr> ShmRegion::map(int fd, size_t bytes) {
  // a region whose owner could still shrink it could fault us mid-copy.
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kSizeSeals) != kSizeSeals) {
    close(fd);
    return absl::InvalidArgumentError("the shared region is not sealed against resizing");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes || bytes == 0) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("the shared region is smaller than the ", bytes, " bytes announced"));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED) return absl::ResourceExhaustedError(absl::StrCat("mmap: ", std::strerror(err)));
  return ShmRegionPtr(new ShmRegion(p, bytes, -1, 0));
}

ShmRegion::~ShmRegion() {
  munmap(data_, bytes_);
  if (fd_ >= 0) close(fd_);
}

}  // namespace tandem::kv_transport
