// What a chat request says about tool calls: whether the model may, must,
// or must not call one of its tools, or must call one named tool. The value
// tool parsing, rendering and the forced-call constraint read.
#pragma once

#include <string>

namespace tandem::openai {

enum class ToolChoiceMode {
  kNone,      // no tools offered (or "none"): the output is plain content.
  kAuto,      // the model decides; its output is parsed for tool calls.
  kRequired,  // the model must call one of the tools.
  kNamed,     // the model must call the function `name`.
};

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kNone;
  std::string name;  // kNamed only

  bool parsesCalls() const { return mode != ToolChoiceMode::kNone; }
  bool forcesCall() const {
    return mode == ToolChoiceMode::kRequired || mode == ToolChoiceMode::kNamed;
  }
};

}  // namespace tandem::openai
