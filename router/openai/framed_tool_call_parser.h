// The tool-call parser of every family (tool_call_family.h), driven by the
// family's syntax: markers that open calls (<tool_call>, [TOOL_CALLS],
// <|python_tag|>), a marker that closes one (</tool_call>), whether the
// output may open with a bare call object (Llama 3, plain JSON), what
// separates calls (';' for Llama 3, ',' in Mistral's list), and whether the
// calls sit in a JSON array (Mistral). Each call object is read by a
// JsonCallScanner.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "router/openai/json_call_scanner.h"
#include "router/openai/tool_call_parser.h"

namespace tandem::openai {

struct ToolCallSyntax {
  std::vector<std::string> openers;
  std::string closer;               // "" = none
  bool bare_json_at_start = false;  // an output opening with '{' may be a call
  char separator = '\0';            // between two calls; '\0' = none
  bool list = false;                // '[' may open a list of calls after an opener

  static ToolCallSyntax of(ToolCallFamily family);
};

class FramedToolCallParser final : public ToolCallParser {
 public:
  FramedToolCallParser(ToolCallSyntax syntax, ToolCallIdSource ids);

  // ToolCallParser
  ParsedText push(std::string_view text) override;
  ParsedText finish() override;
  int numCalls() const override { return calls_; }

 private:
  enum class State {
    kContent,   // plain text, watching for an opener
    kOpened,    // after an opener or separator: a call object (or list) next
    kInCall,    // inside a call object
    kAfterCall, // a call closed: a closer, separator, list end or text next
  };

  // processes buf_ as far as it can; `final`: nothing more will come.
  void drain(bool final, ParsedText& out);
  // each returns false when it needs more text.
  bool drainContent(bool final, ParsedText& out);
  bool drainOpened(bool final, ParsedText& out);
  bool drainInCall(bool final, ParsedText& out);
  bool drainAfterCall(bool final, ParsedText& out);
  // what was read as a possible call is text after all.
  void notACall(ParsedText& out);
  void emitContent(std::string text, ParsedText& out);
  // the length of the longest end of buf_ that begins an opener.
  size_t openerPrefixAtEnd() const;

  const ToolCallSyntax syntax_;
  const ToolCallIdSource ids_;
  State state_ = State::kContent;
  std::string buf_;          // text not processed yet
  std::string raw_;          // what a call not yet named was read from
  bool at_start_ = true;     // nothing but whitespace has been seen
  bool in_list_ = false;
  bool closed_ = false;      // the closer of the last call was seen
  std::optional<JsonCallScanner> scanner_;
  bool named_ = false;       // the call being read has told its name
  int calls_ = 0;
};

}  // namespace tandem::openai
