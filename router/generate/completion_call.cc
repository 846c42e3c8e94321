#include "router/generate/completion_call.h"

#include <random>

#include "absl/strings/str_format.h"
#include "router/generate/admission_api_error.h"
#include "router/generate/call_answer.h"
#include "router/generate/prompt_scores.h"
#include "router/openai/api_error.h"

namespace tandem::router {
namespace {

using Clock = CompletionCall::Clock;

std::string newRequestId(openai::Endpoint endpoint) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return absl::StrFormat("%s-%016x%016x",
                         endpoint == openai::Endpoint::kChatCompletions ? "chatcmpl" : "cmpl",
                         rng(), rng());
}

std::string sseEvent(const std::string& json) { return "data: " + json + "\n\n"; }

}  // namespace

CompletionCall::CompletionCall(const CallContext& context, AdmissionSlot slot,
                               openai::GenerationRequest request,
                               std::vector<TokenizedPrompt> prompts,
                               http::ResponseWriterPtr writer, Clock::time_point arrival)
    : OpenAiCall(context, std::move(slot), std::move(request), std::move(prompts), std::move(writer),
                 arrival) {
  meta_.id = newRequestId(request_.endpoint);
  meta_.created = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
  meta_.model = context_.model->name();
  meta_.endpoint = request_.endpoint;
}

void CompletionCall::submit(const Admission& admission) {
  std::lock_guard lock(mu_);
  if (answered_) return;  // the client left before anything started
  for (size_t p = 0; p < prompts_.size(); ++p) {
    for (int j = 0; j < request_.n; ++j) {
      auto choice = std::make_unique<Choice>(*context_.model, request_);
      choice->index = static_cast<int>(choices_.size());
      choice->prompt_index = static_cast<int>(p);
      choice->result.index = choice->index;
      choice->prompt_tokens = static_cast<int>(prompts_[p].tokens.size());
      choice->timing = metrics_.startChoice();
      if (request_.echo) {
        choice->result.text = prompts_[p].text;
        choice->result.logprobs_text_offset = static_cast<int>(prompts_[p].text.size());
      }
      choices_.push_back(std::move(choice));
    }
  }
  // the stream starts only once every choice was accepted, so a request the
  // generator refuses gets a plain 4xx/503 even when it asked to stream.
  // outputs arriving meanwhile wait for mu_.
  auto self = shared_from_this();
  for (auto& choice : choices_) {
    generation::SamplingParams params = request_.sampling;
    // choices of one seeded request differ from each other, yet repeat.
    if (params.seed) *params.seed += static_cast<uint64_t>(choice->index);
    const int c = choice->index;
    absl::StatusOr<generation::RequestId> id = submitSequence(
        prompts_[choice->prompt_index].tokens, std::move(params),
        [self, c](const generation::TokenOutput& out) { self->onOutput(c, out); });
    if (!id.ok()) {
      cancelAll();
      refuse(toApiError(admission.submitRefused(id.status())));
      return;
    }
    choice->generator_id = *id;
  }
  if (request_.stream) writer_->startStream(200, sseHeaders());
}

void CompletionCall::onOutput(int c, const generation::TokenOutput& output) {
  std::lock_guard lock(mu_);
  Choice& choice = *choices_[c];
  if (answered_ || choice.done) return;
  if (output.finish_reason == generation::FinishReason::kError) {
    failGeneration(request_.stream,
                   sseEvent(openai::errorBody(openai::errorFor(500, kModelFailed))) + "data: [DONE]\n\n");
    return;
  }
  std::string delta;
  std::vector<openai::TokenLogprobEntry> logprobs;
  if (output.token >= 0 && !choice.got_token) {
    choice.got_token = true;
    addPromptScores(choice, output, logprobs);
  }
  // scoring only: the one token the generator was asked for is not shown.
  if (output.token >= 0 && !request_.score_only) appendToken(choice, output, delta, logprobs);
  std::string finish;
  if (request_.score_only && output.finished()) {
    finish = generation::finishReasonName(output.finish_reason == generation::FinishReason::kAbort
                                               ? generation::FinishReason::kAbort
                                               : generation::FinishReason::kLength);
  } else if (choice.text.stopped()) {
    // a stop string ended it: the engine may still be generating.
    context_.generator->cancel(choice.generator_id);
    finish = generation::finishReasonName(generation::FinishReason::kStop);
    choice.result.stop_reason = choice.text.matchedStop();
  } else if (output.finished()) {
    finish = generation::finishReasonName(output.finish_reason);
    delta += choice.text.finish();
  }
  std::vector<openai::ToolCallDelta> calls;
  if (choice.tools != nullptr) {
    openai::ParsedText parsed = choice.tools->push(delta);
    if (!finish.empty()) parsed.append(choice.tools->finish());
    delta = std::move(parsed.content);
    calls = std::move(parsed.calls);
    // the model ended its turn to have its calls run (OpenAI's reason).
    if (finish == "stop" && choice.tools->numCalls() > 0) finish = "tool_calls";
  }
  if (!finish.empty()) {
    choice.done = true;
    choice.result.finish_reason = finish;
    ++num_done_;
  }
  if (request_.stream) {
    if (!delta.empty() || !logprobs.empty() || !finish.empty() || !calls.empty()) {
      sendDelta(choice, std::move(delta), std::move(logprobs), finish, std::move(calls));
    }
    if (cutOffSlowClient(meta_.id)) return;
  } else {
    choice.result.text += delta;
    openai::accumulateToolCalls(calls, choice.result.tool_calls);
    for (auto& e : logprobs) choice.result.logprobs.push_back(std::move(e));
  }
  if (num_done_ == static_cast<int>(choices_.size())) complete();
}

void CompletionCall::addPromptScores(Choice& choice, const generation::TokenOutput& output,
                                     std::vector<openai::TokenLogprobEntry>& logprobs) {
  const bool echoed = request_.echo && request_.want_logprobs;
  if (!echoed && !request_.prompt_logprobs) return;
  const tokenizer::Tokenizer& tok = context_.model->tokenizer();
  const std::vector<int32_t>& ids = prompts_[choice.prompt_index].tokens;
  const std::vector<std::string> texts =
      promptTokenTexts(tok, ids, request_.skip_special_tokens);
  if (echoed) {
    // the prompt's tokens lead the logprobs, from the text's start.
    logprobs = echoedPromptLogprobs(tok, texts, output.prompt_logprobs, request_.top_logprobs);
    choice.result.logprobs_text_offset = 0;
    choice.prompt_scored = true;
  }
  if (request_.prompt_logprobs) {
    choice.result.prompt_logprobs =
        vllmPromptLogprobs(tok, texts, output.prompt_logprobs, *request_.prompt_logprobs);
  }
}

void CompletionCall::appendToken(Choice& choice, const generation::TokenOutput& output,
                                std::string& delta,
                                std::vector<openai::TokenLogprobEntry>& logprobs) {
  metrics_.tokenArrived(choice.timing);
  choice.cached_tokens = output.num_cached_tokens;
  delta += choice.text.push(output.token);
  if (request_.want_logprobs) {
    const tokenizer::Tokenizer& tok = context_.model->tokenizer();
    openai::TokenLogprobEntry entry{tok.tokenBytes(output.token), output.logprob, {}};
    for (const generation::TokenLogprob& top : output.top_logprobs) {
      entry.top.push_back({tok.tokenBytes(top.token), top.logprob});
    }
    logprobs.push_back(std::move(entry));
  }
}

void CompletionCall::sendDelta(Choice& choice, std::string delta,
                              std::vector<openai::TokenLogprobEntry> logprobs,
                              const std::string& finish,
                              std::vector<openai::ToolCallDelta> calls) {
  openai::ChoiceDelta d;
  d.index = choice.index;
  d.first = !choice.sent_first;
  size_t echoed = 0;
  if (d.first && request_.echo) {
    // the prompt's own tokens lead the first chunk's logprobs: they start at 0.
    if (!choice.prompt_scored) echoed = prompts_[choice.prompt_index].text.size();
    delta = prompts_[choice.prompt_index].text + delta;
  }
  choice.sent_first = true;
  d.text = std::move(delta);
  d.logprobs = std::move(logprobs);
  d.finish_reason = finish;
  d.logprobs_text_offset = static_cast<int>(choice.sent_bytes + echoed);
  d.stop_reason = choice.result.stop_reason;
  d.tool_calls = std::move(calls);
  choice.sent_bytes += d.text.size();
  writer_->write(sseEvent(openai::renderChunk(meta_, request_, d)));
}

std::vector<CallMetrics::PromptTokens> CompletionCall::promptTokens() const {
  std::vector<CallMetrics::PromptTokens> prompts;
  int last_prompt = -1;
  for (const auto& choice : choices_) {
    // each prompt counts once, however many choices it has (they follow
    // one another): its cache hit is its first choice's.
    if (choice->prompt_index != last_prompt) {
      last_prompt = choice->prompt_index;
      prompts.push_back({.prompt = choice->prompt_tokens, .cached = choice->cached_tokens});
    }
    prompts.back().generated += choice->timing.tokens;
  }
  return prompts;
}

openai::Usage CompletionCall::usage(const std::vector<CallMetrics::PromptTokens>& prompts) {
  openai::Usage u;
  for (const CallMetrics::PromptTokens& p : prompts) {
    u.prompt_tokens += p.prompt;
    u.cached_tokens += p.cached;
    u.completion_tokens += p.generated;
  }
  return u;
}

void CompletionCall::complete() {
  answered_ = true;
  const std::vector<CallMetrics::PromptTokens> prompts = promptTokens();
  const openai::Usage u = usage(prompts);
  metrics_.completed(prompts);
  metrics_.end(endpoint_, 200);
  if (request_.stream) {
    if (request_.include_usage) writer_->write(sseEvent(openai::renderUsageChunk(meta_, u)));
    writer_->write("data: [DONE]\n\n");
    writer_->finish();
    return;
  }
  std::vector<openai::ChoiceResult> results;
  results.reserve(choices_.size());
  for (auto& choice : choices_) results.push_back(std::move(choice->result));
  writer_->respond(200, jsonHeaders(), openai::renderResponse(meta_, request_, results, u));
}

}  // namespace tandem::router
