#include "router/openai/json_call_scanner.h"

#include <utility>

#include "nlohmann/json.hpp"

namespace tandem::openai {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool isArgumentsKey(const std::string& key) { return key == "arguments" || key == "parameters"; }

// the keys a call object may have before its name: anything else means
// the object is data, not a call.
bool isCallKey(const std::string& key) {
  return key == "name" || isArgumentsKey(key) || key == "type" || key == "id";
}

// the characters of a JSON number, true, false or null.
bool isScalarChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' ||
         c == 'E';
}

}  // namespace

std::string JsonCallScanner::takeArguments() { return std::exchange(args_, std::string()); }

void JsonCallScanner::fail() {
  if (!has_name_) {
    state_ = State::kNotACall;
    return;
  }
  // a named call that broke off keeps what it has.
  if (!saw_args_ && !streaming_args_) args_ += "{}";
  state_ = State::kDone;
}

JsonCallScanner::State JsonCallScanner::push(char c) {
  if (state_ != State::kReading) return state_;
  switch (phase_) {
    case Phase::kStart:
      if (c == '{') {
        phase_ = Phase::kKeyOrEnd;
      } else {
        fail();
      }
      break;
    case Phase::kKeyOrEnd:
    case Phase::kCommaOrEnd:
      if (isSpace(c)) break;
      if (c == '}') {
        if (!has_name_) {
          fail();
        } else {
          if (!saw_args_) args_ += "{}";
          state_ = State::kDone;
        }
      } else if (phase_ == Phase::kCommaOrEnd && c == ',') {
        phase_ = Phase::kKeyOrEnd;
      } else if (phase_ == Phase::kKeyOrEnd && c == '"') {
        key_ = "\"";
        key_escape_ = false;
        phase_ = Phase::kKey;
      } else {
        fail();
      }
      break;
    case Phase::kKey: {
      key_ += c;
      if (key_escape_) {
        key_escape_ = false;
        break;
      }
      if (c == '\\') {
        key_escape_ = true;
        break;
      }
      if (c != '"') break;
      nlohmann::json key = nlohmann::json::parse(key_, nullptr, /*allow_exceptions=*/false);
      if (!key.is_string()) {
        fail();
        break;
      }
      current_key_ = key.get<std::string>();
      if (!has_name_ && !isCallKey(current_key_)) {
        fail();
        break;
      }
      phase_ = Phase::kColon;
      break;
    }
    case Phase::kColon:
      if (isSpace(c)) break;
      if (c == ':') {
        phase_ = Phase::kValue;
      } else {
        fail();
      }
      break;
    case Phase::kValue:
      if (isSpace(c)) break;
      value_.clear();
      depth_ = 0;
      in_string_ = false;
      escape_ = false;
      streaming_args_ = isArgumentsKey(current_key_) && (c == '{' || c == '[');
      phase_ = Phase::kInValue;
      pushInValue(c);
      break;
    case Phase::kInValue:
      pushInValue(c);
      break;
  }
  return state_;
}

void JsonCallScanner::pushInValue(char c) {
  if (value_.empty()) {
    if (c != '"' && c != '{' && c != '[' && !isScalarChar(c)) {
      fail();
      return;
    }
    value_ += c;
    if (c == '"') in_string_ = true;
    if (c == '{' || c == '[') depth_ = 1;
    if (streaming_args_) args_ += c;
    return;
  }
  const char kind = value_[0];
  if (kind != '"' && kind != '{' && kind != '[') {
    // a scalar ends at the first character that cannot continue it.
    if (isScalarChar(c)) {
      value_ += c;
      return;
    }
    valueEnded();
    if (state_ == State::kReading) {
      phase_ = Phase::kCommaOrEnd;
      push(c);
    }
    return;
  }
  value_ += c;
  if (streaming_args_) args_ += c;
  if (in_string_) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
      if (kind == '"') {
        valueEnded();
        if (state_ == State::kReading) phase_ = Phase::kCommaOrEnd;
      }
    }
    return;
  }
  if (c == '"') {
    in_string_ = true;
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else if (c == '}' || c == ']') {
    if (--depth_ == 0) {
      valueEnded();
      if (state_ == State::kReading) phase_ = Phase::kCommaOrEnd;
    }
  }
}

void JsonCallScanner::valueEnded() {
  if (current_key_ == "name") {
    if (has_name_) return;  // a second name is ignored
    nlohmann::json name = nlohmann::json::parse(value_, nullptr, /*allow_exceptions=*/false);
    if (!name.is_string() || name.get_ref<const std::string&>().empty()) {
      fail();
      return;
    }
    name_ = name.get<std::string>();
    has_name_ = true;
  } else if (isArgumentsKey(current_key_)) {
    if (!streaming_args_) {
      // arguments sent as a JSON string hold the JSON text; a scalar is
      // taken as written.
      nlohmann::json value = nlohmann::json::parse(value_, nullptr, /*allow_exceptions=*/false);
      args_ += value.is_string() ? value.get<std::string>() : value_;
    }
    saw_args_ = true;
    streaming_args_ = false;
  }
}

}  // namespace tandem::openai
