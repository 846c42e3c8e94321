// Turns one choice's tokens into the text a client sees, as they arrive:
// always whole UTF-8 (a character split across tokens is held until it
// completes), special tokens dropped when skip_special, and stop strings
// found across token boundaries — text that may be the start of a stop
// string is held back until the next tokens show it is not, so a stop
// string never reaches the client (unless include_stop).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace tandem::router {

class ChoiceTextStream {
 public:
  // `tokenizer` must outlive the stream. empty stop strings are ignored.
  // the tokens continue a prompt: a leading space of the first is kept.
  // `keep_special`: special tokens written out even when skip_special (a
  // tool-call parser reads them: <|python_tag|>, [TOOL_CALLS]).
  ChoiceTextStream(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stop,
                   bool include_stop, bool skip_special,
                   std::vector<int32_t> keep_special = {});

  // appends one generated token; returns the text that can be sent now
  // (maybe empty). after a stop string matched, returns "" for every token.
  std::string push(int32_t token);
  // the text held back, at the end of generation (nothing after a stop).
  std::string finish();

  // a stop string matched; the choice is over.
  bool stopped() const { return stopped_; }
  // the stop string that matched ("" if none).
  const std::string& matchedStop() const { return matched_; }

 private:
  // moves what is certainly not part of a stop string out of held_.
  std::string release();

  const tokenizer::Tokenizer& tokenizer_;
  tokenizer::StreamDecoder decoder_;
  std::vector<int32_t> keep_special_;
  std::vector<std::string> stop_;
  bool include_stop_;
  size_t longest_stop_ = 0;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace tandem::router
