// StreamClient: sends one streaming generation request and records when
// each piece of output arrived. Implementations: OpenAI HTTP with
// server-sent events (http_stream_client.h) and tandem's gRPC API
// (grpc_stream_client.h).
//
// Timestamps are taken on the client when the bytes are read from the
// socket, before any parsing, so they measure what a user would see.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/loadgen/bench_request.h"

namespace tandem::bench {

using Clock = std::chrono::steady_clock;

enum class Api { kCompletions, kChat, kGrpc };

// "completions" | "chat" | "grpc"
const char* apiName(Api api);

struct StreamRequest {
  Api api = Api::kCompletions;
  std::string model;
  // completions and gRPC: token ids when non-empty, else text.
  std::vector<int32_t> prompt_ids;
  std::string prompt_text;
  // chat
  std::vector<ChatMessage> messages;
  int max_tokens = 16;
  bool ignore_eos = true;
  std::optional<double> temperature;
};

struct StreamResult {
  bool ok = false;
  // on failure: "connect", "timeout", "http_<status>", "stream_error",
  // "protocol", "no_output", "cancelled", "grpc_<code>".
  std::string error_kind;
  std::string error_message;
  Clock::time_point start;  // just before the request was sent (or connected)
  Clock::time_point end;    // when the stream finished
  // one entry per received event that carried output (a token, or a few
  // when the server batches them).
  std::vector<Clock::time_point> token_times;
  // from the server's usage report; -1 when it did not send one.
  int prompt_tokens = -1;
  int completion_tokens = -1;
  int cached_tokens = -1;
  std::string text;  // the generated text (multi-turn sends it back)
  std::string finish_reason;
};

class StreamClient {
 public:
  virtual ~StreamClient() = default;
  // starts `req` and returns at once. `done` runs exactly once, on one of
  // the client's threads, with the outcome; it must not block. Thread-safe.
  virtual void start(StreamRequest req, std::function<void(StreamResult)> done) = 0;
  // cancels what is in flight (their `done` runs with "cancelled") and
  // joins the client's threads. Idempotent; the destructor calls it.
  virtual void shutdown() = 0;
};
using StreamClientPtr = std::unique_ptr<StreamClient>;

}  // namespace tandem::bench
