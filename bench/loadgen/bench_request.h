// The value types a workload hands to the runner: one BenchRequest per
// request, in the shape the workload describes it (text or token ids),
// before the runner shapes it for an API (completions, chat, gRPC).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tandem::bench {

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

struct BenchRequest {
  uint64_t index = 0;  // position in the workload, from 0
  // the prompt: token ids when the workload synthesizes tokens (random,
  // traces), text when it comes from real conversations. For a multi-turn
  // session this is the new user message of this turn only.
  std::string prompt_text;
  std::vector<int32_t> prompt_ids;
  // the prompt length the workload intends (tokens), used when the server
  // does not report usage.
  int input_tokens = 0;
  // output tokens to ask for; sent as max_tokens with ignore_eos so the
  // output length follows the workload.
  int max_tokens = 0;
  // arrival from a trace, seconds after the trace's first request.
  std::optional<double> timestamp_s;
  // multi-turn: the conversation this turn belongs to (-1: none) and its
  // place in it; a turn > 0 waits for the previous one plus think_time_s.
  int64_t session_id = -1;
  int turn = 0;
  double think_time_s = 0;
};

}  // namespace tandem::bench
