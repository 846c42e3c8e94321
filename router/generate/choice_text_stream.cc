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
    Stop entry{std::move(s), {}, 0};
    entry.fail.assign(entry.text.size(), 0);
    for (size_t i = 1, k = 0; i < entry.text.size(); ++i) {
      while (k > 0 && entry.text[i] != entry.text[k]) k = entry.fail[k - 1];
      if (entry.text[i] == entry.text[k]) ++k;
      entry.fail[i] = k;
    }
    stop_.push_back(std::move(entry));
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
  scanned_ = 0;
  return out;
}

std::string ChoiceTextStream::release() {
  if (stop_.empty()) {
    scanned_ = 0;
    return std::exchange(held_, std::string());
  }
  // the stops' states follow the new bytes; the earliest-starting stop
  // string completed in them ends the choice (held_ had none before).
  size_t best = std::string::npos;
  const Stop* best_stop = nullptr;
  for (size_t j = scanned_; j < held_.size(); ++j) {
    const char c = held_[j];
    for (Stop& s : stop_) {
      while (s.state > 0 && s.text[s.state] != c) s.state = s.fail[s.state - 1];
      if (s.text[s.state] == c) ++s.state;
      if (s.state < s.text.size()) continue;
      const size_t start = j + 1 - s.text.size();
      if (start < best) {
        best = start;
        best_stop = &s;
      }
      s.state = s.fail[s.state - 1];
    }
  }
  scanned_ = held_.size();
  if (best_stop != nullptr) {
    stopped_ = true;
    matched_ = best_stop->text;
    std::string out = held_.substr(0, best);
    if (include_stop_) out += best_stop->text;
    held_.clear();
    return out;
  }
  // hold the longest tail of held_ that begins some stop string (each
  // state is one such tail); the rest goes out. A stop string starts on a
  // character boundary, so the cut never splits one.
  size_t keep = 0;
  for (const Stop& s : stop_) keep = std::max(keep, s.state);
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  scanned_ = held_.size();
  return out;
}

}  // namespace tandem::router
