// A scripted OpenAI-compatible server for the benchmark's own tests, on
// tandem's HTTP server (router/http): every streaming completion answers
// its first token `first_token_delay` after the request arrived, then one
// token every `token_interval`, up to max_tokens — the known truth the
// measured TTFT and ITL are compared with.
//
// Token writes are scheduled on absolute deadlines (arrival + X + k*Y) by
// Asio timers on one thread, not by a sleeping thread per stream, so 512
// streams cost 512 timers and a late wake-up delays one write without
// shifting every later one.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace tandem::bench::testing {

struct FakeServerOptions {
  std::chrono::milliseconds first_token_delay{100};
  std::chrono::milliseconds token_interval{20};
  int io_threads = 1;
  // reported as usage.prompt_tokens_details.cached_tokens.
  int cached_tokens = 0;
};

class FakeOpenAiServer {
 public:
  // listens on 127.0.0.1, port 0. Requests for model "fail-503" are
  // answered 503 with an OpenAI error body; "fail-midstream" streams one
  // token and then an error event.
  static absl::StatusOr<std::unique_ptr<FakeOpenAiServer>> start(const FakeServerOptions& options);
  ~FakeOpenAiServer();

  std::string url() const;
  int requestsServed() const;
  int connectionsNow() const;

  class Impl;

 private:
  explicit FakeOpenAiServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::bench::testing
