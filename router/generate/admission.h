// Admission: the one path by which a generation request enters the server,
// shared by the OpenAI HTTP front end and the tandem gRPC one (one instance
// for both, so their limits are one budget). It checks credentials
// and each API key's rate limits (api_key_limits.h), readiness and capacity, the model name, turns the prompt (text, token ids
// or chat messages) into token ids, checks the prompt against the context
// and the server's prompt limit, and classifies the generator's refusals.
// Every failure carries a typed AdmissionReason; each front end maps reasons
// to its own wire form (HTTP status + OpenAI error body, gRPC status code).
//
// Capacity is counted in what a request costs, not in requests: a request
// holds one of max_pending_requests slots from reserve() (before its body is
// parsed), then admit() charges the slot its sequences (prompts × n: each
// choice is one sequence on the generator) and prompt tokens (Σ prompt
// tokens × n: each choice carries its prompt to the generator) against
// max_admitted_seqs and max_admitted_prompt_tokens. The slot gives all of it
// back when destroyed, which is when the call ends however it ends
// (finished, failed, refused, client gone).
//
// Parsing, chat rendering and tokenizing run on the admission's own
// preparing threads (offload()), never on a front end's I/O threads; large
// bodies on a lane of their own, so they never delay small ones.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "common/call_executor.h"
#include "generation/request_limits.h"
#include "router/generate/api_key_limits.h"
#include "router/generate/call_context.h"
#include "router/openai/openai_request.h"

namespace tandem::router {

enum class AdmissionReason {
  kUnauthenticated,        // no valid API key
  kRateLimited,            // over the API key's requests or tokens per minute: retry later
  kNotReady,               // the generator cannot take requests (yet)
  kDraining,               // the server is shutting down
  kOverloaded,             // the server's budget is spent for now (requests, sequences,
                           // prompt tokens, or the preparing queue): retry later
  kRequestTooLarge,        // the request alone asks for more than the whole budget
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
  // kRateLimited: seconds to wait before trying again (≥ 1), and which
  // limit the key hit: "requests" or "tokens" (per minute).
  int64_t retry_after_s = 0;
  std::string rate_limit;
};

struct AdmissionOptions {
  // accepted keys, without limits; empty (and no api_key_limits) = no
  // authentication.
  std::vector<std::string> api_keys;
  // the keys and their rate limits (--api-key-file), shared with whoever
  // reloads them; when set, api_keys is not read (it holds those too).
  ApiKeyLimitsPtr api_key_limits;
  // calls in flight at once (each holding an AdmissionSlot from
  // reserve(), also while its request waits to be prepared); more are
  // kOverloaded.
  int max_pending_requests = 1024;
  // sequences admitted at once over every call (a request costs its
  // prompts × n); a request asking more alone is kRequestTooLarge.
  int64_t max_admitted_seqs = 1024;
  // prompt tokens admitted at once over every call (a request costs Σ its
  // prompts' tokens × n); a request asking more alone is kRequestTooLarge.
  int64_t max_admitted_prompt_tokens = int64_t{1} << 22;
  // most prompt tokens (0 = the model's context length).
  int max_prompt_tokens = 0;
  // threads that parse, render and tokenize requests (0 = half the
  // hardware threads, 1 to 8).
  int prepare_threads = 0;
  // requests waiting for a preparing thread; more are kOverloaded.
  int max_queued_prepares = 1024;
  // a request body of at least this many bytes is prepared on the large
  // lane: a thread of its own, at a lower CPU priority, with its own queue
  // (max_queued_prepares as well), so parsing, rendering and tokenizing
  // megabytes never make a small request wait behind them.
  size_t large_body_bytes = 64 * 1024;
};


// a tokenized prompt and the text `echo` repeats (for token ids, decoded
// only when the request echoes).
struct TokenizedPrompt {
  std::vector<int32_t> tokens;
  std::string text;
};

class Admission;

// what one call holds of the admission's budget: a place among
// max_pending_requests, and once admitted its sequences and prompt tokens;
// all given back when destroyed. Move-only; a default-constructed slot
// holds nothing.
class AdmissionSlot {
 public:
  AdmissionSlot() = default;
  AdmissionSlot(AdmissionSlot&& other) noexcept { *this = std::move(other); }
  AdmissionSlot& operator=(AdmissionSlot&& other) noexcept;
  AdmissionSlot(const AdmissionSlot&) = delete;
  AdmissionSlot& operator=(const AdmissionSlot&) = delete;
  ~AdmissionSlot();

  int64_t seqs() const { return seqs_; }
  int64_t promptTokens() const { return prompt_tokens_; }

 private:
  friend class Admission;
  explicit AdmissionSlot(Admission* owner) : owner_(owner) {}
  void release();

  Admission* owner_ = nullptr;
  ApiKeyCaller caller_;  // whose tokens admit() charges; null = no limits
  int64_t seqs_ = 0;
  int64_t prompt_tokens_ = 0;
};

class Admission {
 public:
  // starts the preparing threads. `context`'s members must outlive the
  // admission and every call it admits.
  Admission(const CallContext& context, AdmissionOptions options);
  // stop().
  ~Admission();
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  const CallContext& context() const { return context_; }
  const AdmissionOptions& options() const { return options_; }

  // kUnauthenticated unless no key is configured or `authorization` is
  // "Bearer <a key>" (looked up by its hash, api_key_limits.h). Charges
  // nothing: every API call passes here, generation calls then reserve().
  std::optional<AdmissionError> checkCredentials(std::string_view authorization) const;

  // a slot for one generation call, holding no sequences yet: kDraining
  // after setDraining(), kNotReady while the generator is not ready,
  // kUnauthenticated as checkCredentials, kRateLimited (counted in the
  // metrics' rejected requests, limit "api_key") when the caller's key
  // (`authorization`) is over its requests or tokens per minute — a key's
  // requests are counted here —, kOverloaded (counted, limit "requests")
  // when max_pending_requests calls hold slots. admit() charges the key's
  // tokens.
  std::variant<AdmissionSlot, AdmissionError> reserve(std::string_view authorization = {});

  // runs `task` on one of the preparing threads, after those queued before
  // it; the front ends prepare and admit requests there, not on their I/O
  // threads. `body_bytes` is the size of what the task parses: from
  // large_body_bytes on, the task goes to the large lane. kDraining once
  // stop() began; kOverloaded (counted, limit "prepare_queue") when
  // max_queued_prepares tasks wait already in its lane: `task` is dropped
  // then.
  std::optional<AdmissionError> offload(CallExecutor::Task task, size_t body_bytes = 0);

  // checks `request`'s model and size (prompts × n sequences, before any
  // tokenizing), turns its prompts into token ids (chat: renders the
  // messages; completions: each prompt, with the text `echo` repeats; a
  // text too long to fit by its bytes alone is refused before it is
  // tokenized),
  // checks the longest prompt and fills in or checks
  // request.sampling.max_tokens. Errors: kUnknownModel, kRequestTooLarge,
  // kInvalidPrompt, kEmptyPrompt, kPromptTooLong, kContextLengthExceeded.
  std::variant<std::vector<TokenizedPrompt>, AdmissionError> prepare(
      openai::GenerationRequest& request) const;

  // prepare(), then charges `slot` (one of reserve()'s, holding nothing
  // yet) with the request's cost: prompts × n sequences and Σ prompt tokens
  // × n. Errors: prepare()'s; kRequestTooLarge when its prompt tokens alone
  // exceed max_admitted_prompt_tokens, or its tokens (prompt tokens + n ×
  // max_tokens per prompt) exceed its API key's whole tokens per minute; kOverloaded (counted, limit "seqs" or
  // "prompt_tokens") when the cost does not fit beside what is admitted now.
  // Nothing is charged on error.
  std::variant<std::vector<TokenizedPrompt>, AdmissionError> admit(
      AdmissionSlot& slot, openai::GenerationRequest& request);

  // the reason the generator refused a request with `status`
  // (Generator::submit's error): a broken limit by its LimitKind
  // (generation/request_limits.h: kContextLengthExceeded, kPromptTooLong,
  // kRequestTooLarge; vocabulary and cache fit are kInvalidRequest);
  // Unavailable is kNotReady; ResourceExhausted (shed) is kOverloaded (429
  // with Retry-After); anything else kInvalidRequest.
  AdmissionError submitRefused(const absl::Status& status) const;
  // the limits the admission checks: the served model's context, the
  // server's prompt limit and its budget (the generator checks its own at
  // submit).
  generation::RequestLimits limits() const;

  // from now on reserve() answers kDraining.
  void setDraining() { draining_.store(true); }
  // runs the preparations already queued, then joins the preparing
  // threads; offload() answers kDraining from now on. Idempotent; not from
  // a preparing thread.
  void stop() {
    executor_->stop();
    large_executor_->stop();
  }
  // calls holding a slot.
  int pending() const { return pending_.load(); }
  // sequences and prompt tokens admitted now (held by slots).
  int64_t admittedSeqs() const;
  int64_t admittedPromptTokens() const;

 private:
  friend class AdmissionSlot;

  // chat with a tool_choice that forces a call: sets request.sampling.grammar
  // to the call's grammar (kInvalidRequest naming tool_choice or tools when
  // it cannot).
  std::optional<AdmissionError> constrainToolCall(openai::GenerationRequest& request) const;
  // the longest prompt against the context (kContextLengthExceeded, or
  // kPromptTooLong under the server's limit), and max_tokens: filled in
  // when unset, else checked against what the context leaves.
  std::optional<AdmissionError> checkLengths(openai::GenerationRequest& request,
                                             const std::vector<TokenizedPrompt>& prompts) const;
  // the same refusal for a text of `bytes` bytes that cannot fit however
  // it tokenizes (Tokenizer::maxInputBytesPerToken): decided before any
  // tokenizing, so a prompt of megabytes costs no tokenizer work.
  std::optional<AdmissionError> refuseByLength(size_t bytes, const char* field) const;
  // gives back what a slot held.
  void release(const AdmissionSlot& slot);

  const CallContext context_;
  const AdmissionOptions options_;
  const ApiKeyLimitsPtr keys_;  // never null
  std::atomic<bool> draining_{false};
  std::atomic<int> pending_{0};
  mutable std::mutex budget_mu_;
  int64_t admitted_seqs_ = 0;           // guarded by budget_mu_
  int64_t admitted_prompt_tokens_ = 0;  // guarded by budget_mu_
  std::unique_ptr<CallExecutor> executor_;
  std::unique_ptr<CallExecutor> large_executor_;  // bodies of large_body_bytes and more
};

}  // namespace tandem::router
