// Reads one JSON object that describes a function call, a character at a
// time: {"name": "f", "arguments": {...}} ("parameters" is taken for
// "arguments", "type" and "id" are skipped). It tells the name as soon as
// its string closes and hands out the arguments' text while it arrives,
// so a streamed call shows its name first and its arguments in pieces.
#pragma once

#include <string>

namespace tandem::openai {

class JsonCallScanner {
 public:
  enum class State {
    kReading,   // more characters needed
    kDone,      // the object closed (or, once named, broke off): a call
    kNotACall,  // before any name: not a call object (an unknown key, a
                // name that is no string, bad JSON, no name at all)
  };

  // feeds the next character; the first must be '{'. Characters after
  // kDone or kNotACall are not read.
  State push(char c);
  State state() const { return state_; }

  bool hasName() const { return has_name_; }
  const std::string& name() const { return name_; }
  // the arguments' text that arrived since the last call: the raw JSON of
  // an object (or array) value as it streams; a string value (arguments
  // sent as a JSON string) decoded, once it closes; "{}" at kDone when the
  // call had none.
  std::string takeArguments();

 private:
  enum class Phase { kStart, kKeyOrEnd, kKey, kColon, kValue, kInValue, kCommaOrEnd };

  // a value of the object ended; its raw text is value_.
  void valueEnded();
  void fail();
  // one character inside a value (value_ started already).
  void pushInValue(char c);

  State state_ = State::kReading;
  Phase phase_ = Phase::kStart;
  std::string key_;    // raw JSON of the key being read (with quotes)
  std::string value_;  // raw JSON of the value being read
  std::string current_key_;
  bool key_escape_ = false;
  // the value's nesting, string and escape state.
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  bool streaming_args_ = false;  // value_ is the arguments object, handed out as it comes
  bool saw_args_ = false;
  bool has_name_ = false;
  std::string name_;
  std::string args_;  // not yet taken
};

}  // namespace tandem::openai
