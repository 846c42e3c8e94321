#include "router/generate/choice_text_stream.h"

#include <algorithm>
#include <string_view>

namespace tandem::router {

ChoiceTextStream::ChoiceTextStream(const tokenizer::Tokenizer& tokenizer,
                                   std::vector<std::string> stop, bool include_stop,
                                   bool skip_special, std::vector<int32_t> keep_special)
    : tokenizer_(tokenizer),
      decoder_(tokenizer, skip_special, /*continuation=*/true),
      keep_special_(skip_special ? std::move(keep_special) : std::vector<int32_t>()),
      include_stop_(include_stop) {
  for (std::string& s : stop) {
    if (s.empty()) continue;
    longest_stop_ = std::max(longest_stop_, s.size());
    stop_.push_back(std::move(s));
  }
}

std::string ChoiceTextStream::push(int32_t token) {
  if (stopped_) return "";
  if (std::find(keep_special_.begin(), keep_special_.end(), token) != keep_special_.end()) {
    // a kept special token is whole text of its own.
    held_ += decoder_.finish();
    held_ += tokenizer_.tokenBytes(token);
  } else {
    held_ += decoder_.push(token);
  }
  return release();
}

std::string ChoiceTextStream::finish() {
  if (stopped_) return "";
  held_ += decoder_.finish();
  std::string out = release();
  if (stopped_) return out;
  out += held_;
  held_.clear();
  return out;
}

std::string ChoiceTextStream::release() {
  if (stop_.empty()) return std::exchange(held_, std::string());
  // the earliest complete stop string ends the choice. held_ had none
  // before this token, so any match includes new text.
  size_t best = std::string::npos;
  const std::string* best_stop = nullptr;
  for (const std::string& s : stop_) {
    const size_t pos = held_.find(s);
    if (pos < best) {
      best = pos;
      best_stop = &s;
    }
  }
  if (best_stop != nullptr) {
    stopped_ = true;
    matched_ = *best_stop;
    std::string out = held_.substr(0, best);
    if (include_stop_) out += *best_stop;
    held_.clear();
    return out;
  }
  // hold the longest tail of held_ that begins some stop string. a stop
  // string starts on a character boundary, so the cut never splits one.
  const size_t max_tail = std::min(held_.size(), longest_stop_ - 1);
  size_t keep = 0;
  for (size_t k = max_tail; k > 0 && keep == 0; --k) {
    const std::string_view tail(held_.data() + held_.size() - k, k);
    for (const std::string& s : stop_) {
      if (std::string_view(s).starts_with(tail)) {
        keep = k;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

}  // namespace tandem::router
