#include "server/kv_transport/shm_protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tandem::kv_transport::shm {

namespace {

constexpr size_t kHeaderBytes = 8;  // u32 type, u32 payload length

absl::StatusOr<sockaddr_un> abstractAddress(const std::string& name, socklen_t* len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.empty() || name.size() + 1 > sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("bad unix socket name '", name, "'"));
  }
  addr.sun_path[0] = '\0';  // abstract namespace
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

absl::Status errnoStatus(std::string_view what) {
  return absl::UnavailableError(absl::StrCat(absl::string_view(what.data(), what.size()), ": ",
                                             std::strerror(errno)));
}

}  // namespace

absl::Status writeFrame(int sock, MessageType type, std::string_view payload, int fd) {
  uint32_t header[2] = {static_cast<uint32_t>(type), static_cast<uint32_t>(payload.size())};
  iovec iov[2] = {{header, kHeaderBytes}, {const_cast<char*>(payload.data()), payload.size()}};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  size_t total = kHeaderBytes + payload.size();
  while (total > 0) {
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{sock, POLLOUT, 0};
        poll(&p, 1, 100);
        continue;
      }
      return errnoStatus("send to the KV peer");
    }
    total -= static_cast<size_t>(n);
    msg.msg_control = nullptr;  // the fd went with the first bytes
    msg.msg_controllen = 0;
    // skip what was sent
    size_t sent = static_cast<size_t>(n);
    while (sent > 0 && msg.msg_iovlen > 0) {
      size_t take = std::min(sent, msg.msg_iov->iov_len);
      msg.msg_iov->iov_base = static_cast<char*>(msg.msg_iov->iov_base) + take;
      msg.msg_iov->iov_len -= take;
      sent -= take;
      if (msg.msg_iov->iov_len == 0) {
        ++msg.msg_iov;
        --msg.msg_iovlen;
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Frame> readFrame(int sock, FrameBuffer& buffer, Deadline deadline) {
  Frame frame;
  int fd = -1;
  while (true) {
    auto got = buffer.next(&frame);
    if (!got.ok()) return got.status();
    if (*got) {
      frame.fd = fd;
      return frame;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return absl::DeadlineExceededError("the KV receiver did not answer in time");
    pollfd p{sock, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    if (r < 0 && errno != EINTR) return errnoStatus("poll");
    if (r <= 0) continue;
    // recvmsg so an fd passed with the frame is received too.
    char data[4096];
    iovec iov{data, sizeof(data)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      if (fd >= 0) close(fd);
      return n == 0 ? absl::UnavailableError("the KV receiver closed the connection")
                    : errnoStatus("recv from the KV receiver");
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        if (fd >= 0) close(fd);
        std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
      }
    }
    buffer.append(data, static_cast<size_t>(n));
  }
}

void FrameBuffer::append(const char* data, size_t n) { buf_.append(data, n); }

absl::Status FrameBuffer::fill(int sock) {
  char data[65536];
  while (true) {
    ssize_t n = recv(sock, data, sizeof(data), MSG_DONTWAIT);
    if (n > 0) {
      buf_.append(data, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof(data)) return absl::OkStatus();
      continue;
    }
    if (n == 0) return absl::UnavailableError("the KV sender closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return absl::OkStatus();
    return errnoStatus("recv from the KV sender");
  }
}

absl::StatusOr<bool> FrameBuffer::next(Frame* frame) {
  if (buf_.size() - start_ < kHeaderBytes) return false;
  uint32_t header[2];
  std::memcpy(header, buf_.data() + start_, kHeaderBytes);
  if (header[1] > kMaxPayload) {
    return absl::InvalidArgumentError(absl::StrCat("oversized KV control frame: ", header[1]));
  }
  if (buf_.size() - start_ < kHeaderBytes + header[1]) return false;
  frame->type = static_cast<MessageType>(header[0]);
  frame->payload.assign(buf_, start_ + kHeaderBytes, header[1]);
  start_ += kHeaderBytes + header[1];
  if (start_ == buf_.size()) {
    buf_.clear();
    start_ = 0;
  }
  return true;
}

absl::StatusOr<int> listenAbstract(const std::string& name) {
  socklen_t len = 0;
  auto addr = abstractAddress(name, &len);
  if (!addr.ok()) return addr.status();
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errnoStatus("socket");
  if (bind(s, reinterpret_cast<const sockaddr*>(&*addr), len) != 0 || listen(s, 64) != 0) {
    absl::Status st = errnoStatus(absl::StrCat("listen on @", name));
    close(s);
    return st;
  }
  return s;
}

absl::StatusOr<int> connectAbstract(const std::string& name) {
  socklen_t len = 0;
  auto addr = abstractAddress(name, &len);
  if (!addr.ok()) return addr.status();
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errnoStatus("socket");
  if (connect(s, reinterpret_cast<const sockaddr*>(&*addr), len) != 0) {
    absl::Status st = errnoStatus(absl::StrCat("connect to @", name));
    close(s);
    return st;
  }
  return s;
}

absl::StatusOr<uint32_t> peerUid(int sock) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred)) {
    return errnoStatus("SO_PEERCRED");
  }
  return static_cast<uint32_t>(cred.uid);
}

absl::Status checkPeer(int sock, const std::vector<uint32_t>& allowed_uids) {
  absl::StatusOr<uint32_t> uid = peerUid(sock);
  if (!uid.ok()) return uid.status();
  if (*uid == static_cast<uint32_t>(geteuid())) return absl::OkStatus();
  for (uint32_t allowed : allowed_uids) {
    if (*uid == allowed) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "the peer of the shm KV socket runs as uid ", *uid, ", not as uid ", geteuid(),
      allowed_uids.empty() ? "" : " or an allowed one"));
}

bool Reader::raw(void* p, size_t n) {
  if (left() < n) return false;
  std::memcpy(p, s_.data() + pos_, n);
  pos_ += n;
  return true;
}

bool Reader::bytes(std::string* out) {
  uint32_t n = 0;
  if (!u32(&n) || left() < n) return false;
  out->assign(s_.data() + pos_, n);
  pos_ += n;
  return true;
}

bool blockInRegion(int32_t id, uint64_t storage_offset, uint64_t block_bytes, uint64_t region_bytes) {
  if (id < 0 || block_bytes == 0 || storage_offset > region_bytes) return false;
  // (id + 1) * block_bytes <= region_bytes - storage_offset, without a product.
  return static_cast<uint64_t>(id) < (region_bytes - storage_offset) / block_bytes;
}

}  // namespace tandem::kv_transport::shm
