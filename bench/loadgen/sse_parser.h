// Incremental parser for server-sent events (the text/event-stream format
// of the WHATWG HTML spec, §9.2): bytes arrive in arbitrary pieces; each
// complete event's data (its "data:" lines joined by "\n") is handed out.
// Comments (":..."), "event:", "id:" and "retry:" fields are read and
// dropped: OpenAI streams only use data.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace tandem::bench {

class SseParser {
 public:
  using DataCallback = std::function<void(std::string_view data)>;

  // feeds the next bytes; `on_data` runs for every event completed by them.
  void feed(std::string_view bytes, const DataCallback& on_data);
  // the stream ended: an event not yet closed by a blank line is handed out
  // (servers that close right after the last "data:" line).
  void finish(const DataCallback& on_data);

 private:
  void line(std::string_view text, const DataCallback& on_data);

  std::string partial_;  // bytes of a line not yet ended
  std::string data_;     // data of the event being read
  bool has_data_ = false;
  bool skip_lf_ = false;  // the last byte was '\r': a following '\n' ends nothing
};

}  // namespace tandem::bench
