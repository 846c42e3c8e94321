// Turns one choice's tokens into the text a client sees, as they arrive:
// always whole UTF-8 (a character split across tokens is held until it
// completes), special tokens dropped when skip_special, and stop strings
// found across token boundaries — text that may be the start of a stop
// string is held back until the next tokens show it is not, so a stop
// string never reaches the client (unless include_stop). Each stop string
// is matched as the bytes arrive (Knuth-Morris-Pratt: its state is the
// longest suffix of the held text that begins it), so a token costs the
// stop strings' count times its bytes, however long the strings and the
// text held: rescanning the held text cost its square, which a client
// could drive to seconds a token with one long stop string.
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
  struct Stop {
    std::string text;
    // Knuth-Morris-Pratt: fail[i] is the longest proper prefix of
    // text[0, i] that is also its suffix.
    std::vector<size_t> fail;
    // how many of text's first bytes end held_ (< text.size()).
    size_t state = 0;
  };

  // moves what is certainly not part of a stop string out of held_.
  std::string release();

  const tokenizer::Tokenizer& tokenizer_;
  tokenizer::StreamDecoder decoder_;
  std::vector<int32_t> keep_special_;
  std::vector<Stop> stop_;
  bool include_stop_;
  std::string held_;
  size_t scanned_ = 0;  // held_'s first bytes the stops' states have seen
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace tandem::router
