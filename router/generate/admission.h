// Admission: the one path by which a generation request enters the server,
// shared by the OpenAI HTTP front end and the tandem gRPC one. It checks
// credentials, readiness and capacity (a slot among max_pending_requests),
// the model name, turns the prompt (text, token ids or chat messages) into
// token ids, checks the prompt against the context and the server's prompt
// limit, and classifies the generator's refusals. Every failure carries a
// typed AdmissionReason; each front end maps reasons to its own wire form
// (HTTP status + OpenAI error body, gRPC status code).
//
// Which checks apply is AdmissionOptions: the HTTP front end takes them all;
// the gRPC one today calls neither checkCredentials() nor reserve() and
// turns the prompt limits off (calling them, or setting the option, turns
// each on there too).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "router/generate/call_context.h"
#include "router/openai/openai_request.h"

namespace tandem::router {

enum class AdmissionReason {
  kUnauthenticated,        // no valid API key
  kNotReady,               // the generator cannot take requests (yet)
  kDraining,               // the server is shutting down
  kOverloaded,             // max_pending_requests calls already in flight
  kUnknownModel,           // the request names a model this server does not serve
  kEmptyPrompt,            // the prompt has no tokens
  kInvalidPrompt,          // the chat template refused the messages
  kPromptTooLong,          // over the server's max_prompt_tokens (yet within the context)
  kContextLengthExceeded,  // prompt (+ max_tokens) does not fit the model's context
  kInvalidRequest,         // the generator refused it (params, token ids, cache size)
};

struct AdmissionError {
  AdmissionReason reason = AdmissionReason::kInvalidRequest;
  std::string message;
  // the request field at fault ("model", "prompt", "messages",
  // "max_tokens"); "" = none in particular.
  std::string field;
};

struct AdmissionOptions {
  // accepted keys; empty = no authentication.
  std::vector<std::string> api_keys;
  // calls in flight at once (each holding an AdmissionSlot from
  // reserve()); more are kOverloaded.
  int max_pending_requests = 1024;
  // checks prompt lengths before submitting (kPromptTooLong,
  // kContextLengthExceeded) and fills in max_tokens when the request did
  // not set it (completions: 16, chat: the rest of the context). Off, the
  // generator's own checks (classified by submitRefused) are the only ones.
  bool check_prompt_length = true;
  // most prompt tokens (0 = the model's context length); needs
  // check_prompt_length.
  int max_prompt_tokens = 0;
  // a request with no model name means the served model (gRPC); otherwise
  // the name must match.
  bool empty_model_is_served = false;
};

// a tokenized prompt and the text `echo` repeats (for token ids, decoded
// only when the request echoes).
struct TokenizedPrompt {
  std::vector<int32_t> tokens;
  std::string text;
};

// one call's place among max_pending_requests; released when destroyed.
// Move-only; a default-constructed slot holds nothing.
class AdmissionSlot {
 public:
  AdmissionSlot() = default;
  explicit AdmissionSlot(std::atomic<int>* count) : count_(count) {}
  AdmissionSlot(AdmissionSlot&& other) noexcept : count_(std::exchange(other.count_, nullptr)) {}
  AdmissionSlot& operator=(AdmissionSlot&& other) noexcept;
  AdmissionSlot(const AdmissionSlot&) = delete;
  AdmissionSlot& operator=(const AdmissionSlot&) = delete;
  ~AdmissionSlot();

 private:
  std::atomic<int>* count_ = nullptr;
};

class Admission {
 public:
  // `context`'s members must outlive the admission and every call it admits.
  Admission(const CallContext& context, AdmissionOptions options);

  const CallContext& context() const { return context_; }

  // kUnauthenticated unless api_keys is empty or `authorization` is
  // "Bearer <one of them>" (compared in constant time).
  std::optional<AdmissionError> checkCredentials(std::string_view authorization) const;

  // a slot for one call: kDraining after setDraining(), kNotReady while
  // the generator is not ready, kOverloaded (counted in the metrics'
  // rejected requests) when max_pending_requests calls hold slots.
  std::variant<AdmissionSlot, AdmissionError> reserve();

  // checks `request`'s model and turns its prompts into token ids (chat:
  // renders the messages; completions: each prompt, with the text `echo`
  // repeats); with check_prompt_length, checks the longest prompt and
  // fills in or checks request.sampling.max_tokens. Errors: kUnknownModel,
  // kInvalidPrompt, kEmptyPrompt, kPromptTooLong, kContextLengthExceeded.
  std::variant<std::vector<TokenizedPrompt>, AdmissionError> prepare(
      openai::GenerationRequest& request) const;

  // the reason the generator refused a prompt of `prompt_tokens` tokens
  // with `status` (Generator::submit's error): Unavailable is kNotReady;
  // ResourceExhausted (shed) is kOverloaded (429 with Retry-After); a
  // prompt that leaves no room in the generator's context is
  // kContextLengthExceeded; anything else kInvalidRequest.
  AdmissionError submitRefused(const absl::Status& status, size_t prompt_tokens) const;

  // from now on reserve() answers kDraining.
  void setDraining() { draining_.store(true); }
  // calls holding a slot.
  int pending() const { return pending_.load(); }

 private:
  std::optional<AdmissionError> checkLengths(openai::GenerationRequest& request,
                                             const std::vector<TokenizedPrompt>& prompts) const;

  const CallContext context_;
  const AdmissionOptions options_;
  std::atomic<bool> draining_{false};
  std::atomic<int> pending_{0};
};

}  // namespace tandem::router
