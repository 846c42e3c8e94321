// The OpenAI wire format on both ends of a streaming request: the JSON
// body of /v1/completions and /v1/chat/completions, and what each
// "data:" event of the reply means for a StreamResult.
#pragma once

#include <string>
#include <string_view>

#include "bench/loadgen/stream_client.h"

namespace tandem::bench {

// "/v1/completions" or "/v1/chat/completions".
const char* openAiPath(Api api);

// the request body: stream with usage (stream_options.include_usage),
// max_tokens and ignore_eos so the output length is the workload's, and
// temperature when given. Completions send token ids when the request has
// them (tandem, vLLM and llama-server accept them).
std::string openAiBody(const StreamRequest& req);

// Reads the data of each server-sent event into a StreamResult.
class OpenAiStreamReader {
 public:
  explicit OpenAiStreamReader(Api api) : api_(api) {}

  // one event's data received at `t`. Output text stamps a token time;
  // usage (also llama-server's "timings") fills the counts; an error
  // object marks the result failed ("stream_error").
  void onData(std::string_view data, Clock::time_point t, StreamResult* result);
  // true after "data: [DONE]".
  bool done() const { return done_; }

 private:
  Api api_;
  bool done_ = false;
};

}  // namespace tandem::bench
