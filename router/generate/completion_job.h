// One OpenAI completions or chat request in flight: its choices (n per
// prompt) generating on the backend, their text streams (UTF-8, stop
// strings), and the answer — SSE chunks as tokens arrive, or one JSON body
// when all choices finished. A client that goes away cancels every choice.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/http/http_server.h"
#include "generation/generator.h"
#include "router/generate/choice_text_stream.h"
#include "router/generate/served_model.h"
#include "router/metrics/serving_metrics.h"
#include "router/openai/openai_response.h"

namespace tandem::router {

// what a job needs from the server; all outlive every job.
struct JobContext {
  const ServedModel* model = nullptr;
  generation::Generator* backend = nullptr;
  ServingMetrics* metrics = nullptr;
  // jobs alive (decremented when a job is destroyed); may be null.
  std::atomic<int>* live_jobs = nullptr;
};

// a tokenized prompt and the text echo would repeat.
struct TokenizedPrompt {
  std::vector<int32_t> tokens;
  std::string text;
};

class CompletionJob : public std::enable_shared_from_this<CompletionJob> {
 public:
  using Clock = std::chrono::steady_clock;

  // submits every choice and answers through `writer` (at once with an
  // error when a choice is refused). `arrival` is when the request came in.
  ~CompletionJob();

  static void start(const JobContext& context, openai::GenerationRequest request,
                    std::vector<TokenizedPrompt> prompts, http::ResponseWriterPtr writer,
                    Clock::time_point arrival);

 private:
  struct Choice {
    Choice(const tokenizer::Tokenizer& tok, const openai::GenerationRequest& r)
        : text(tok, r.stop, r.include_stop_str_in_output, r.skip_special_tokens) {}
    int index = 0;
    int prompt_index = 0;
    generation::RequestId backend_id = 0;
    ChoiceTextStream text;
    openai::ChoiceResult result;  // whole text and logprobs (non-streaming)
    int completion_tokens = 0;
    int cached_tokens = 0;
    int prompt_tokens = 0;
    bool done = false;
    bool sent_first = false;
    size_t sent_bytes = 0;  // text sent in earlier chunks (streaming)
    Clock::time_point last_token;
  };

  CompletionJob(const JobContext& context, openai::GenerationRequest request,
                std::vector<TokenizedPrompt> prompts, http::ResponseWriterPtr writer,
                Clock::time_point arrival);

  void submitAll();
  // backend thread: one output of choice `c`.
  void onOutput(int c, const generation::TokenOutput& output);
  void appendToken(Choice& choice, const generation::TokenOutput& output, std::string& delta,
                   std::vector<openai::TokenLogprobEntry>& logprobs);
  void sendDelta(Choice& choice, std::string delta,
                 std::vector<openai::TokenLogprobEntry> logprobs, const std::string& finish);
  void complete();
  // the client went away: cancel everything, answer nothing.
  void clientGone();
  // cancels the unfinished choices; mu_ held.
  void cancelAll();
  openai::Usage usage() const;

  const JobContext context_;
  const openai::GenerationRequest request_;
  const std::vector<TokenizedPrompt> prompts_;
  const http::ResponseWriterPtr writer_;
  const Clock::time_point arrival_;
  openai::ResponseMeta meta_;

  std::mutex mu_;
  std::vector<std::unique_ptr<Choice>> choices_;  // guarded by mu_
  int num_done_ = 0;                              // guarded by mu_
  bool answered_ = false;                         // guarded by mu_
  bool first_token_seen_ = false;                 // guarded by mu_
};

}  // namespace tandem::router
