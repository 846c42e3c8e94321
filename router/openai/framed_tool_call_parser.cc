#include "router/openai/framed_tool_call_parser.h"

#include <algorithm>
#include <random>
#include <utility>

namespace tandem::openai {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// `text` without its trailing whitespace.
std::string rstrip(std::string_view text) {
  size_t end = text.size();
  while (end > 0 && isSpace(text[end - 1])) --end;
  return std::string(text.substr(0, end));
}

void appendArguments(ParsedText& out, int index, std::string text) {
  if (text.empty()) return;
  if (!out.calls.empty() && out.calls.back().index == index) {
    out.calls.back().arguments += text;
  } else {
    out.calls.push_back(ToolCallDelta{index, "", "", std::move(text)});
  }
}

}  // namespace

void ParsedText::append(ParsedText more) {
  content += more.content;
  for (ToolCallDelta& delta : more.calls) {
    if (!calls.empty() && calls.back().index == delta.index && delta.id.empty()) {
      calls.back().arguments += delta.arguments;
    } else {
      calls.push_back(std::move(delta));
    }
  }
}

void accumulateToolCalls(const std::vector<ToolCallDelta>& delta, std::vector<ToolCall>& calls) {
  for (const ToolCallDelta& d : delta) {
    if (d.index >= static_cast<int>(calls.size())) calls.resize(d.index + 1);
    ToolCall& call = calls[d.index];
    if (!d.id.empty()) call.id = d.id;
    if (!d.name.empty()) call.name = d.name;
    call.arguments += d.arguments;
  }
}

std::string newToolCallId(ToolCallFamily family) {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  // Mistral's template refuses ids that are not 9 alphanumerics, and a
  // client sends the id back in the next turn.
  const bool mistral = family == ToolCallFamily::kMistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlphabet[pick(rng)];
  return id;
}

ToolCallParserPtr makeToolCallParser(ToolCallFamily family, ToolCallIdSource ids) {
  if (!ids) ids = [family] { return newToolCallId(family); };
  return std::make_unique<FramedToolCallParser>(ToolCallSyntax::of(family), std::move(ids));
}

ToolCallSyntax ToolCallSyntax::of(ToolCallFamily family) {
  ToolCallSyntax syntax;
  switch (family) {
    case ToolCallFamily::kJson:
      syntax.bare_json_at_start = true;
      syntax.separator = ';';
      break;
    case ToolCallFamily::kLlama3Json:
      syntax.openers = {"<|python_tag|>"};
      syntax.bare_json_at_start = true;
      syntax.separator = ';';
      break;
    case ToolCallFamily::kHermes:
      syntax.openers = {"<tool_call>"};
      syntax.closer = "</tool_call>";
      break;
    case ToolCallFamily::kMistral:
      syntax.openers = {"[TOOL_CALLS]"};
      syntax.separator = ',';
      syntax.list = true;
      break;
  }
  return syntax;
}

FramedToolCallParser::FramedToolCallParser(ToolCallSyntax syntax, ToolCallIdSource ids)
    : syntax_(std::move(syntax)), ids_(std::move(ids)) {}

ParsedText FramedToolCallParser::push(std::string_view text) {
  buf_.append(text);
  ParsedText out;
  drain(/*final=*/false, out);
  return out;
}

ParsedText FramedToolCallParser::finish() {
  ParsedText out;
  drain(/*final=*/true, out);
  // whatever is left was waiting for text that will not come.
  if ((state_ == State::kOpened || state_ == State::kInCall) && !named_) notACall(out);
  emitContent(std::exchange(buf_, std::string()), out);
  state_ = State::kContent;
  return out;
}

void FramedToolCallParser::drain(bool final, ParsedText& out) {
  for (;;) {
    bool more = false;
    switch (state_) {
      case State::kContent: more = drainContent(final, out); break;
      case State::kOpened: more = drainOpened(final, out); break;
      case State::kInCall: more = drainInCall(final, out); break;
      case State::kAfterCall: more = drainAfterCall(final, out); break;
    }
    if (!more) return;
  }
}

void FramedToolCallParser::emitContent(std::string text, ParsedText& out) {
  if (text.empty()) return;
  at_start_ = false;
  out.content += text;
}

void FramedToolCallParser::notACall(ParsedText& out) {
  emitContent(std::exchange(raw_, std::string()), out);
  scanner_.reset();
  state_ = State::kContent;
}

size_t FramedToolCallParser::openerPrefixAtEnd() const {
  size_t best = 0;
  for (const std::string& opener : syntax_.openers) {
    const size_t max = std::min(buf_.size(), opener.size() - 1);
    for (size_t k = max; k > best; --k) {
      if (std::string_view(buf_).substr(buf_.size() - k) == std::string_view(opener).substr(0, k)) {
        best = k;
        break;
      }
    }
  }
  return best;
}

bool FramedToolCallParser::drainContent(bool final, ParsedText& out) {
  if (at_start_ && syntax_.bare_json_at_start) {
    const size_t first = buf_.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return false;  // only whitespace yet: held
    if (buf_[first] == '{') {
      // an output that opens with an object may be a call: read it as one,
      // keeping its text in case it is not.
      at_start_ = false;
      raw_ = buf_.substr(0, first);
      buf_.erase(0, first);
      scanner_.emplace();
      named_ = false;
      state_ = State::kInCall;
      return true;
    }
    at_start_ = false;
  }
  size_t at = std::string::npos;
  const std::string* opener = nullptr;
  for (const std::string& o : syntax_.openers) {
    const size_t pos = buf_.find(o);
    if (pos < at) {
      at = pos;
      opener = &o;
    }
  }
  if (opener != nullptr) {
    // the whitespace between text and a call belongs to neither.
    emitContent(rstrip(std::string_view(buf_).substr(0, at)), out);
    raw_ = *opener;
    buf_.erase(0, at + opener->size());
    in_list_ = false;
    state_ = State::kOpened;
    return true;
  }
  if (final) {
    emitContent(std::exchange(buf_, std::string()), out);
    return false;
  }
  // hold what may begin an opener, and the whitespace before it (dropped
  // if a call follows).
  size_t keep_from = buf_.size() - openerPrefixAtEnd();
  while (keep_from > 0 && isSpace(buf_[keep_from - 1])) --keep_from;
  emitContent(buf_.substr(0, keep_from), out);
  buf_.erase(0, keep_from);
  return false;
}

bool FramedToolCallParser::drainOpened(bool final, ParsedText& out) {
  size_t i = 0;
  for (; i < buf_.size(); ++i) {
    const char c = buf_[i];
    if (isSpace(c)) {
      if (!named_) raw_ += c;
      continue;
    }
    if (c == '[' && syntax_.list && !in_list_) {
      in_list_ = true;
      raw_ += c;
      continue;
    }
    buf_.erase(0, i);
    if (c == '{') {
      scanner_.emplace();
      named_ = false;
      state_ = State::kInCall;
    } else {
      notACall(out);
    }
    return true;
  }
  buf_.clear();
  if (final) notACall(out);
  return false;
}

bool FramedToolCallParser::drainInCall(bool final, ParsedText& out) {
  size_t i = 0;
  for (; i < buf_.size(); ++i) {
    const char c = buf_[i];
    if (!named_) raw_ += c;
    const JsonCallScanner::State state = scanner_->push(c);
    if (!named_ && scanner_->hasName()) {
      // the name is known: the call is told, its arguments follow as they come.
      named_ = true;
      raw_.clear();
      out.calls.push_back(ToolCallDelta{calls_, ids_(), scanner_->name(), ""});
      ++calls_;
    }
    if (state == JsonCallScanner::State::kNotACall) {
      buf_.erase(0, i + 1);
      notACall(out);
      return true;
    }
    if (named_) appendArguments(out, calls_ - 1, scanner_->takeArguments());
    if (state == JsonCallScanner::State::kDone) {
      buf_.erase(0, i + 1);
      scanner_.reset();
      named_ = false;
      closed_ = false;
      state_ = State::kAfterCall;
      return true;
    }
  }
  buf_.clear();
  if (final && named_) {
    // cut short (max_tokens): the call keeps the arguments it got.
    scanner_.reset();
    named_ = false;
    state_ = State::kAfterCall;
  }
  return false;
}

bool FramedToolCallParser::drainAfterCall(bool final, ParsedText& out) {
  const size_t first = buf_.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    buf_.clear();  // whitespace after a call is nobody's
    return false;
  }
  buf_.erase(0, first);
  if (!syntax_.closer.empty() && !closed_) {
    const std::string& closer = syntax_.closer;
    if (buf_.compare(0, closer.size(), closer) == 0) {
      buf_.erase(0, closer.size());
      closed_ = true;
      return true;
    }
    if (!final && buf_.size() < closer.size() && closer.compare(0, buf_.size(), buf_) == 0) {
      return false;  // maybe the closer: wait
    }
  }
  const char c = buf_[0];
  if (syntax_.separator != '\0' && c == syntax_.separator && (syntax_.closer.empty() || closed_)) {
    buf_.erase(0, 1);
    state_ = State::kOpened;
    return true;
  }
  if (in_list_ && c == ']') {
    buf_.erase(0, 1);
    in_list_ = false;
    return true;
  }
  state_ = State::kContent;
  (void)out;
  return true;
}

}  // namespace tandem::openai
