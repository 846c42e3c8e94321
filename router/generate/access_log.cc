#include "router/generate/access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace tandem::router {
namespace {

// RFC 3339 in UTC with milliseconds: 2025-01-31T12:00:00.123Z.
std::string rfc3339(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                         utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms % 1000));
}

// a text field: "-" when empty, spaces and control bytes escaped so that a
// client-chosen path or id cannot forge a field or a line, and at most
// kMaxField bytes of it.
constexpr size_t kMaxField = 256;
std::string textField(const std::string& value) {
  if (value.empty()) return "-";
  std::string out;
  for (unsigned char c : value.substr(0, kMaxField)) {
    if (c <= 0x20 || c == 0x7f || c == '"' || c == '\\') {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string count(int n) { return n < 0 ? "-" : std::to_string(n); }

}  // namespace

absl::StatusOr<AccessLog::Format> AccessLog::parseFormat(const std::string& name) {
  if (name == "text") return Format::kText;
  if (name == "json") return Format::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("--access-log-format must be text or json, got '", name, "'"));
}

absl::StatusOr<std::shared_ptr<AccessLog>> AccessLog::open(const std::string& target, Format format) {
  if (target == "off" || target.empty()) return nullptr;
  if (target == "stderr") return std::shared_ptr<AccessLog>(new AccessLog(STDERR_FILENO, false, format));
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--access-log ", target, ": cannot open it (", std::strerror(errno), ")"));
  }
  return std::shared_ptr<AccessLog>(new AccessLog(fd, true, format));
}

AccessLog::~AccessLog() {
  if (owned_) ::close(fd_);
}

void AccessLog::write(const AccessEntry& entry) {
  const std::string line = format_ == Format::kJson ? formatJson(entry) : formatText(entry);
  std::lock_guard lock(mu_);
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the line is lost, the request is not
    done += static_cast<size_t>(n);
  }
}

std::string AccessLog::formatText(const AccessEntry& e) {
  return absl::StrFormat(
      "%s peer=%s %s api=%s model=%s status=%d prompt_tokens=%s output_tokens=%s ttft_ms=%s "
      "duration_ms=%.1f request_id=%s\n",
      rfc3339(e.time), textField(e.peer), e.protocol, textField(e.api), textField(e.model), e.status,
      count(e.prompt_tokens), count(e.output_tokens),
      e.ttft_ms ? absl::StrFormat("%.1f", *e.ttft_ms) : std::string("-"), e.duration_ms,
      textField(e.request_id));
}

std::string AccessLog::formatJson(const AccessEntry& e) {
  nlohmann::ordered_json j;
  j["time"] = rfc3339(e.time);
  j["peer"] = e.peer;
  j["protocol"] = e.protocol;
  j["api"] = e.api;
  j["model"] = e.model.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.model);
  j["status"] = e.status;
  j["prompt_tokens"] = e.prompt_tokens < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(e.prompt_tokens);
  j["output_tokens"] = e.output_tokens < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(e.output_tokens);
  j["ttft_ms"] = e.ttft_ms ? nlohmann::ordered_json(*e.ttft_ms) : nlohmann::ordered_json();
  j["duration_ms"] = e.duration_ms;
  j["request_id"] = e.request_id;
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace tandem::router
