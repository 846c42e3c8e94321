#include "bench/loadgen/sse_parser.h"

namespace tandem::bench {

void SseParser::feed(std::string_view bytes, const DataCallback& on_data) {
  size_t start = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    char c = bytes[i];
    if (skip_lf_) {
      skip_lf_ = false;
      if (c == '\n') {
        start = i + 1;
        continue;
      }
    }
    if (c != '\n' && c != '\r') continue;
    // lines end at "\r\n", "\n" or "\r".
    if (partial_.empty()) {
      line(bytes.substr(start, i - start), on_data);
    } else {
      partial_.append(bytes.substr(start, i - start));
      std::string whole = std::move(partial_);
      partial_.clear();
      line(whole, on_data);
    }
    skip_lf_ = c == '\r';
    start = i + 1;
  }
  partial_.append(bytes.substr(start));
}

void SseParser::finish(const DataCallback& on_data) {
  if (!partial_.empty()) {
    std::string whole = std::move(partial_);
    partial_.clear();
    line(whole, on_data);
  }
  line("", on_data);
}

void SseParser::line(std::string_view text, const DataCallback& on_data) {
  if (text.empty()) {
    // a blank line dispatches the event.
    if (has_data_) on_data(data_);
    data_.clear();
    has_data_ = false;
    return;
  }
  if (text.front() == ':') return;  // a comment
  size_t colon = text.find(':');
  std::string_view field = text.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = text.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field != "data") return;
  if (has_data_) data_.push_back('\n');
  data_.append(value);
  has_data_ = true;
}

}  // namespace tandem::bench
