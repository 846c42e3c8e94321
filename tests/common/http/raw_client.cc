#include "tests/common/http/raw_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <strings.h>

namespace tandem::http::testing {
namespace {

using Clock = std::chrono::steady_clock;

int millisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::string RawResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (equalsIgnoreCase(key, name)) return value;
  }
  return "";
}

bool RawResponse::hasHeader(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (equalsIgnoreCase(key, name)) return true;
  }
  return false;
}

std::unique_ptr<RawClient> RawClient::connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return nullptr;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return std::unique_ptr<RawClient>(new RawClient(fd));
}

RawClient::~RawClient() { close(); }

void RawClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawClient::send(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool RawClient::fill(Clock::time_point deadline) {
  if (fd_ < 0 || eof_) return false;
  pollfd entry{fd_, POLLIN, 0};
  int ready = ::poll(&entry, 1, millisLeft(deadline));
  if (ready <= 0) return false;
  char chunk[64 * 1024];
  ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

std::optional<std::string> RawClient::readLine(Clock::time_point deadline) {
  for (;;) {
    size_t end = buffer_.find("\r\n");
    if (end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      return line;
    }
    if (!fill(deadline)) return std::nullopt;
  }
}

bool RawClient::readExactly(size_t n, std::string* out, Clock::time_point deadline) {
  while (buffer_.size() < n) {
    if (!fill(deadline)) return false;
  }
  out->append(buffer_, 0, n);
  buffer_.erase(0, n);
  return true;
}

std::optional<RawResponse> RawClient::readHead(std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  std::optional<std::string> status_line = readLine(deadline);
  if (!status_line) return std::nullopt;
  RawResponse response;
  size_t space = status_line->find(' ');
  if (space == std::string::npos) return std::nullopt;
  response.version = status_line->substr(0, space);
  response.status = std::atoi(status_line->c_str() + space + 1);
  for (;;) {
    std::optional<std::string> line = readLine(deadline);
    if (!line) return std::nullopt;
    if (line->empty()) return response;
    size_t colon = line->find(':');
    if (colon == std::string::npos) return std::nullopt;
    std::string value = line->substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    response.headers.emplace_back(line->substr(0, colon), value);
  }
}

std::optional<std::string> RawClient::readChunk(std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  std::optional<std::string> size_line = readLine(deadline);
  if (!size_line) return std::nullopt;
  char* end = nullptr;
  unsigned long size = std::strtoul(size_line->c_str(), &end, 16);
  if (end == size_line->c_str()) return std::nullopt;
  if (size == 0) {
    for (;;) {  // trailers, then the blank line
      std::optional<std::string> trailer = readLine(deadline);
      if (!trailer) return std::nullopt;
      if (trailer->empty()) return std::string();
    }
  }
  std::string data;
  std::string crlf;
  if (!readExactly(size, &data, deadline) || !readExactly(2, &crlf, deadline) || crlf != "\r\n") {
    return std::nullopt;
  }
  return data;
}

std::optional<RawResponse> RawClient::readResponse(std::chrono::milliseconds timeout, bool no_body) {
  Clock::time_point deadline = Clock::now() + timeout;
  std::optional<RawResponse> response = readHead(timeout);
  if (!response) return std::nullopt;
  if (no_body || response->status / 100 == 1 || response->status == 204 || response->status == 304) {
    return response;
  }
  if (response->hasHeader("Content-Length")) {
    size_t length = std::strtoull(response->header("Content-Length").c_str(), nullptr, 10);
    if (!readExactly(length, &response->body, deadline)) return std::nullopt;
    return response;
  }
  if (equalsIgnoreCase(response->header("Transfer-Encoding"), "chunked")) {
    for (;;) {
      std::optional<std::string> chunk = readChunk(std::chrono::milliseconds(millisLeft(deadline)));
      if (!chunk) return std::nullopt;
      if (chunk->empty()) return response;
      response->body += *chunk;
      response->chunks.push_back(std::move(*chunk));
    }
  }
  while (fill(deadline)) {
  }
  if (!eof_) return std::nullopt;  // timed out before the close that ends the body
  response->body = std::move(buffer_);
  buffer_.clear();
  return response;
}

bool RawClient::waitClosed(std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  while (!eof_) {
    if (!fill(deadline) && !eof_) return false;
  }
  return true;
}

bool RawClient::staysQuiet(std::chrono::milliseconds timeout) {
  if (!buffer_.empty() || eof_) return false;
  pollfd entry{fd_, POLLIN, 0};
  return ::poll(&entry, 1, static_cast<int>(timeout.count())) == 0;
}

}  // namespace tandem::http::testing
