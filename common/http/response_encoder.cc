#include "common/http/response_encoder.h"

#include <strings.h>

#include <ctime>

#include "absl/strings/str_cat.h"
#include "common/http/error_body.h"

namespace tandem::http {
namespace {

bool isFramingOrServerHeader(std::string_view name) {
  for (std::string_view owned : {"content-length", "transfer-encoding", "connection", "server", "date"}) {
    if (name.size() == owned.size() && strncasecmp(name.data(), owned.data(), owned.size()) == 0) {
      return true;
    }
  }
  return false;
}

bool holdsLineBreak(std::string_view text) {
  return text.find_first_of("\r\n") != std::string_view::npos;
}

}  // namespace

bool statusHasNoBody(int status) {
  return (status >= 100 && status < 200) || status == 204 || status == 304;
}

std::string httpDate(std::chrono::system_clock::time_point time) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  size_t n = std::strftime(text, sizeof(text), "%a, %d %b %Y %H:%M:%S GMT", &utc);
  return std::string(text, n);
}

std::string encodeResponseHead(int status, const std::vector<HttpHeader>& headers,
                               BodyFraming framing, size_t content_length,
                               ConnectionHeader connection) {
  std::string head = absl::StrCat("HTTP/1.1 ", status, " ", std::string(reasonPhrase(status)),
                                  "\r\nServer: tandem\r\nDate: ",
                                  httpDate(std::chrono::system_clock::now()), "\r\n");
  for (const HttpHeader& header : headers) {
    if (header.name.empty() || isFramingOrServerHeader(header.name) ||
        holdsLineBreak(header.name) || holdsLineBreak(header.value)) {
      continue;
    }
    absl::StrAppend(&head, header.name, ": ", header.value, "\r\n");
  }
  switch (framing) {
    case BodyFraming::kContentLength:
      absl::StrAppend(&head, "Content-Length: ", content_length, "\r\n");
      break;
    case BodyFraming::kChunked:
      head += "Transfer-Encoding: chunked\r\n";
      break;
    case BodyFraming::kUntilClose:
    case BodyFraming::kNone:
      break;
  }
  switch (connection) {
    case ConnectionHeader::kOmit: break;
    case ConnectionHeader::kKeepAlive: head += "Connection: keep-alive\r\n"; break;
    case ConnectionHeader::kClose: head += "Connection: close\r\n"; break;
  }
  head += "\r\n";
  return head;
}

std::string encodeChunk(std::string_view data) {
  static constexpr char kHex[] = "0123456789abcdef";
  char size[2 * sizeof(size_t)];
  size_t n = 0;
  size_t value = data.size();
  do {
    size[sizeof(size) - 1 - n++] = kHex[value & 0xf];
    value >>= 4;
  } while (value != 0);
  std::string chunk;
  chunk.reserve(n + data.size() + 4);
  chunk.append(size + sizeof(size) - n, n);
  chunk += "\r\n";
  chunk += data;
  chunk += "\r\n";
  return chunk;
}

std::string encodeErrorResponse(int status, std::string body) {
  std::string response = encodeResponseHead(status, {{"Content-Type", "application/json"}},
                                            BodyFraming::kContentLength, body.size(),
                                            ConnectionHeader::kClose);
  response += body;
  return response;
}

}  // namespace tandem::http
