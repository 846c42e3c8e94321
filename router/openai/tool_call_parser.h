// Turns a chat choice's generated text into content and OpenAI tool calls,
// as the text arrives: push() each text delta, finish() at the end. What
// comes out is the same however the text is split (every byte boundary
// gives the same content and calls), so streaming and whole answers agree.
//
// Text that may still become a tool call (a marker's first bytes, a bare
// JSON object's start, whitespace before a call) is held back until the
// next text decides; text that turns out not to be a call comes out as
// content, unchanged.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "router/openai/tool_call_family.h"

namespace tandem::openai {

// a whole tool call (non-streaming answers, and a stream summed up).
struct ToolCall {
  std::string id;         // "call_..." (Mistral: 9 alphanumerics, as its template requires)
  std::string name;
  std::string arguments;  // JSON text, as the model wrote it
  bool operator==(const ToolCall&) const = default;
};

// a piece of one tool call: the first piece of each call carries its id
// and name (arguments may be empty); later ones carry more arguments.
struct ToolCallDelta {
  int index = 0;
  std::string id;    // "" after the first piece
  std::string name;  // "" after the first piece
  std::string arguments;
};

// what one push() or finish() releases.
struct ParsedText {
  std::string content;
  std::vector<ToolCallDelta> calls;

  bool empty() const { return content.empty() && calls.empty(); }
  // appends `more` (merging pieces of the same call).
  void append(ParsedText more);
};

// adds `delta`'s pieces to `calls` (a new index starts a call).
void accumulateToolCalls(const std::vector<ToolCallDelta>& delta, std::vector<ToolCall>& calls);

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  // the next text of the output; returns what can be told now.
  virtual ParsedText push(std::string_view text) = 0;
  // the output ended: returns everything held back (a call cut short
  // keeps the arguments it got).
  virtual ParsedText finish() = 0;
  // calls started so far.
  virtual int numCalls() const = 0;
};
using ToolCallParserPtr = std::unique_ptr<ToolCallParser>;

// makes a call's id; the default draws random ones in the family's form.
using ToolCallIdSource = std::function<std::string()>;

// the parser for `family`'s syntax (tool_call_family.h).
ToolCallParserPtr makeToolCallParser(ToolCallFamily family, ToolCallIdSource ids = nullptr);

// a random id: "call_" + 24 alphanumerics; Mistral: 9 alphanumerics.
std::string newToolCallId(ToolCallFamily family);

}  // namespace tandem::openai
