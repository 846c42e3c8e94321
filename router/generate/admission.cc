#include "router/generate/admission.h"

#include <algorithm>
#include <cassert>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "generation/request_limits.h"
#include "router/openai/tool_call_constraint.h"
#include "router/openai/response_format.h"

namespace tandem::router {
namespace {

AdmissionError error(AdmissionReason reason, std::string message, std::string field = "") {
  return AdmissionError{reason, std::move(message), std::move(field)};
}

// the one map from a refusal's status to the admission's reason: a broken
// limit by its kind (generation/request_limits.h), the rest by code.
AdmissionReason reasonFor(const absl::Status& status) {
  if (std::optional<generation::LimitKind> kind = generation::limitKind(status)) {
    switch (*kind) {
      case generation::LimitKind::kContextLength: return AdmissionReason::kContextLengthExceeded;
      case generation::LimitKind::kPromptLength: return AdmissionReason::kPromptTooLong;
      case generation::LimitKind::kAdmissionBudget: return AdmissionReason::kRequestTooLarge;
      case generation::LimitKind::kVocabulary:
      case generation::LimitKind::kCacheFit: return AdmissionReason::kInvalidRequest;
    }
  }
  if (absl::IsUnavailable(status)) return AdmissionReason::kNotReady;
  // the generator sheds it (no worker can meet the TTFT SLO): try later.
  if (absl::IsResourceExhausted(status)) return AdmissionReason::kOverloaded;
  return AdmissionReason::kInvalidRequest;
}

std::optional<AdmissionError> refused(const absl::Status& status, std::string field) {
  if (status.ok()) return std::nullopt;
  return error(reasonFor(status), std::string(status.message()), std::move(field));
}

// the key of "Bearer <key>"; nullopt for any other form.
std::optional<std::string_view> bearerKey(std::string_view authorization) {
  constexpr std::string_view kBearer = "Bearer ";
  if (!absl::StartsWithIgnoreCase(absl::string_view(authorization.data(), authorization.size()),
                                  absl::string_view(kBearer.data(), kBearer.size()))) {
    return std::nullopt;
  }
  return authorization.substr(kBearer.size());
}

// how much lower the large lane's thread runs (niceness, 0..19).
constexpr int kLargeLaneNice = 10;

constexpr char kKeyRequired[] = "a valid API key is required: Authorization: Bearer <key>";

ApiKeyLimitsPtr keysOf(const AdmissionOptions& options) {
  if (options.api_key_limits != nullptr) return options.api_key_limits;
  // keys without a file cannot fail to load.
  return *ApiKeyLimits::create(options.api_keys);
}

// the preparing threads when the options leave it to us: half the
// hardware threads (the rest serve I/O and the engine), 1 to 8.
int prepareThreads(int configured) {
  if (configured > 0) return configured;
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 2, 1, 8);
}

}  // namespace

AdmissionSlot& AdmissionSlot::operator=(AdmissionSlot&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    caller_ = std::move(other.caller_);
    seqs_ = std::exchange(other.seqs_, 0);
    prompt_tokens_ = std::exchange(other.prompt_tokens_, 0);
  }
  return *this;
}

AdmissionSlot::~AdmissionSlot() { release(); }

void AdmissionSlot::release() {
  if (owner_ != nullptr) owner_->release(*this);
  owner_ = nullptr;
  caller_ = nullptr;
  seqs_ = 0;
  prompt_tokens_ = 0;
}

Admission::Admission(const CallContext& context, AdmissionOptions options)
    : context_(context),
      options_(std::move(options)),
      keys_(keysOf(options_)),
      executor_(std::make_unique<CallExecutor>(
          prepareThreads(options_.prepare_threads),
          static_cast<size_t>(std::max(options_.max_queued_prepares, 0)))),
      // one thread: large bodies are few, and each takes a core while it
      // is parsed; niced, so the small lane, the I/O threads and the
      // streams in flight get the CPU first.
      large_executor_(std::make_unique<CallExecutor>(
          1, static_cast<size_t>(std::max(options_.max_queued_prepares, 0)), kLargeLaneNice)) {}

Admission::~Admission() { stop(); }

std::optional<AdmissionError> Admission::checkCredentials(std::string_view authorization) const {
  if (keys_->empty()) return std::nullopt;
  std::optional<std::string_view> key = bearerKey(authorization);
  if (key && keys_->find(*key) != nullptr) return std::nullopt;
  return error(AdmissionReason::kUnauthenticated, kKeyRequired);
}

std::variant<AdmissionSlot, AdmissionError> Admission::reserve(std::string_view authorization) {
  const bool draining = draining_.load();
  if (draining || !context_.generator->ready()) {
    return draining ? error(AdmissionReason::kDraining, "the server is shutting down")
                    : error(AdmissionReason::kNotReady, "the backend is not ready");
  }
  ApiKeyCaller caller;
  if (!keys_->empty()) {
    std::optional<std::string_view> key = bearerKey(authorization);
    if (!key) return error(AdmissionReason::kUnauthenticated, kKeyRequired);
    std::variant<ApiKeyCaller, ApiKeyRefusal> admitted = keys_->admitRequest(*key);
    if (auto* refusal = std::get_if<ApiKeyRefusal>(&admitted)) {
      if (refusal->kind == ApiKeyRefusal::Kind::kUnknownKey) {
        return error(AdmissionReason::kUnauthenticated, kKeyRequired);
      }
      context_.metrics->countRejected("api_key");
      AdmissionError limited = error(AdmissionReason::kRateLimited, std::move(refusal->message));
      limited.rate_limit = refusal->kind == ApiKeyRefusal::Kind::kTokenRate ? "tokens" : "requests";
      limited.retry_after_s = refusal->retry_after_s;
      return limited;
    }
    caller = std::get<ApiKeyCaller>(std::move(admitted));
  }
  const int pending = pending_.fetch_add(1);
  AdmissionSlot slot(this);
  slot.caller_ = std::move(caller);
  if (pending >= options_.max_pending_requests) {
    context_.metrics->countRejected("requests");
    return error(AdmissionReason::kOverloaded,
                 absl::StrFormat("the server is overloaded (%d requests in progress); retry later",
                                 pending));
  }
  return slot;
}

std::optional<AdmissionError> Admission::offload(CallExecutor::Task task, size_t body_bytes) {
  CallExecutor& lane = body_bytes >= options_.large_body_bytes ? *large_executor_ : *executor_;
  if (lane.post(std::move(task))) return std::nullopt;
  if (lane.stopping()) return error(AdmissionReason::kDraining, "the server is shutting down");
  context_.metrics->countRejected("prepare_queue");
  return error(AdmissionReason::kOverloaded,
               absl::StrFormat("the server is overloaded (%d requests waiting to be prepared); "
                               "retry later",
                               options_.max_queued_prepares));
}

// tool_choice "required" or a named function: the output must be a call in
// the model's own syntax (router/openai/tool_call_constraint.h), enforced
// through the grammar of structured output.
std::optional<AdmissionError> Admission::constrainToolCall(openai::GenerationRequest& request) const {
  if (!request.tool_choice.forcesCall()) return std::nullopt;
  std::optional<openai::ToolCallConstraint> constraint =
      openai::toolCallConstraint(context_.model->toolCallFamily(), request.tools, request.tool_choice);
  if (!constraint) return std::nullopt;
  if (!request.sampling.grammar.empty()) {
    return error(AdmissionReason::kInvalidRequest,
                 "a tool_choice that forces a call cannot be combined with response_format or grammar",
                 "tool_choice");
  }
  absl::StatusOr<std::string> grammar = openai::grammarForJsonSchema(
      constraint->schema, {.prefix = constraint->prefix, .suffix = constraint->suffix});
  if (!grammar.ok()) {
    return error(AdmissionReason::kInvalidRequest,
                 absl::StrFormat("the tool's parameters cannot be enforced for tool_choice: %s",
                                 grammar.status().message()),
                 "tools");
  }
  request.sampling.grammar = *std::move(grammar);
  return std::nullopt;
}

std::variant<std::vector<TokenizedPrompt>, AdmissionError> Admission::prepare(
    openai::GenerationRequest& request) const {
  const ServedModel& model = *context_.model;
  if (request.model != model.name()) {
    return error(AdmissionReason::kUnknownModel,
                 absl::StrFormat("the model '%s' does not exist; this server serves '%s'",
                                 request.model, model.name()),
                 "model");
  }
  const bool chat = request.endpoint == openai::Endpoint::kChatCompletions;
  // the sequences are known before anything is tokenized: a request that
  // can never fit costs no tokenizing.
  const int64_t num_prompts = chat ? 1 : static_cast<int64_t>(request.prompts.size());
  const int64_t seqs = num_prompts * request.n;
  if (std::optional<AdmissionError> e = refused(
          generation::checkBudget(limits(), seqs,
                                  absl::StrFormat("%d prompts, n = %d", num_prompts, request.n), 0),
          request.n > 1 ? "n" : (chat ? "messages" : "prompt"))) {
    return std::move(*e);
  }
  std::vector<TokenizedPrompt> prompts;
  if (chat) {
    absl::StatusOr<std::string> text = model.chatText(request);
    if (!text.ok()) {
      return error(AdmissionReason::kInvalidPrompt, std::string(text.status().message()),
                   "messages");
    }
    if (std::optional<AdmissionError> e = refuseByLength(text->size(), "messages")) {
      return std::move(*e);
    }
    prompts.push_back({model.tokenizer().encode(*text, /*add_special=*/false), ""});
    if (std::optional<AdmissionError> e = constrainToolCall(request)) return std::move(*e);
  } else {
    for (const openai::Prompt& p : request.prompts) {
      if (!p.is_tokens) {
        if (std::optional<AdmissionError> e = refuseByLength(p.text.size(), "prompt")) {
          return std::move(*e);
        }
      }
      TokenizedPrompt t{model.promptTokens(p), p.text};
      // only echo reads the text back: decode token ids for it alone.
      if (p.is_tokens && request.echo) {
        t.text = model.tokenizer().decode(p.token_ids, request.skip_special_tokens);
      }
      prompts.push_back(std::move(t));
    }
  }
  for (const TokenizedPrompt& p : prompts) {
    if (p.tokens.empty()) return error(AdmissionReason::kEmptyPrompt, "the prompt is empty");
  }
  if (prompts.empty()) return error(AdmissionReason::kEmptyPrompt, "the prompt is empty");
  if (std::optional<AdmissionError> e = checkLengths(request, prompts)) return std::move(*e);
  return prompts;
}

std::variant<std::vector<TokenizedPrompt>, AdmissionError> Admission::admit(
    AdmissionSlot& slot, openai::GenerationRequest& request) {
  assert(slot.owner_ == this && slot.seqs_ == 0);
  auto prepared = prepare(request);
  if (std::holds_alternative<AdmissionError>(prepared)) return prepared;
  const auto& prompts = std::get<std::vector<TokenizedPrompt>>(prepared);
  // each choice is its own sequence on the generator, carrying its prompt.
  const int64_t seqs = static_cast<int64_t>(prompts.size()) * request.n;
  int64_t prompt_tokens = 0;
  for (const TokenizedPrompt& p : prompts) prompt_tokens += static_cast<int64_t>(p.tokens.size());
  prompt_tokens *= request.n;
  const bool chat = request.endpoint == openai::Endpoint::kChatCompletions;
  if (std::optional<AdmissionError> e = refused(
          generation::checkBudget(limits(), seqs, "", prompt_tokens), chat ? "messages" : "prompt")) {
    return std::move(*e);
  }
  // the key's tokens per minute count what the request may use: its
  // prompts and max_tokens for each of its sequences.
  const int64_t key_tokens = prompt_tokens + seqs * int64_t{request.sampling.max_tokens};
  if (std::optional<ApiKeyRefusal> refusal = ApiKeyLimits::checkTokens(slot.caller_, key_tokens)) {
    return error(AdmissionReason::kRequestTooLarge, std::move(refusal->message), "max_tokens");
  }
  std::lock_guard lock(budget_mu_);
  const bool seqs_fit = admitted_seqs_ + seqs <= options_.max_admitted_seqs;
  if (!seqs_fit ||
      admitted_prompt_tokens_ + prompt_tokens > options_.max_admitted_prompt_tokens) {
    context_.metrics->countRejected(seqs_fit ? "prompt_tokens" : "seqs");
    return error(AdmissionReason::kOverloaded,
                 absl::StrFormat("the server is overloaded (%d sequences and %d prompt tokens in "
                                 "progress); retry later",
                                 admitted_seqs_, admitted_prompt_tokens_));
  }
  ApiKeyLimits::chargeTokens(slot.caller_, key_tokens);
  admitted_seqs_ += seqs;
  admitted_prompt_tokens_ += prompt_tokens;
  slot.seqs_ += seqs;
  slot.prompt_tokens_ += prompt_tokens;
  context_.metrics->setAdmitted(admitted_seqs_, admitted_prompt_tokens_);
  return prepared;
}

void Admission::release(const AdmissionSlot& slot) {
  pending_.fetch_sub(1);
  if (slot.seqs_ == 0 && slot.prompt_tokens_ == 0) return;
  std::lock_guard lock(budget_mu_);
  admitted_seqs_ -= slot.seqs_;
  admitted_prompt_tokens_ -= slot.prompt_tokens_;
  context_.metrics->setAdmitted(admitted_seqs_, admitted_prompt_tokens_);
}

int64_t Admission::admittedSeqs() const {
  std::lock_guard lock(budget_mu_);
  return admitted_seqs_;
}

int64_t Admission::admittedPromptTokens() const {
  std::lock_guard lock(budget_mu_);
  return admitted_prompt_tokens_;
}

generation::RequestLimits Admission::limits() const {
  return {.max_model_len = context_.model->maxModelLen(),
          .max_prompt_tokens = options_.max_prompt_tokens,
          .max_admitted_seqs = options_.max_admitted_seqs,
          .max_admitted_prompt_tokens = options_.max_admitted_prompt_tokens};
}

std::optional<AdmissionError> Admission::checkLengths(
    openai::GenerationRequest& request, const std::vector<TokenizedPrompt>& prompts) const {
  // the prompt and what it asks to generate must fit the context.
  const generation::RequestLimits rule = limits();
  const bool chat = request.endpoint == openai::Endpoint::kChatCompletions;
  int longest = 0;
  for (const TokenizedPrompt& p : prompts) longest = std::max<int>(longest, p.tokens.size());
  if (std::optional<AdmissionError> e = refused(
          generation::checkPromptLength(rule, longest, absl::StrFormat("%d tokens", longest)),
          chat ? "messages" : "prompt")) {
    return e;
  }
  if (!request.max_tokens_set) {
    const int rest = rule.max_model_len - longest;
    request.sampling.max_tokens = chat ? rest : std::min(16, rest);
    return std::nullopt;
  }
  return refused(generation::checkCompletionLength(rule, longest, request.sampling.max_tokens),
                 "max_tokens");
}

std::optional<AdmissionError> Admission::refuseByLength(size_t bytes, const char* field) const {
  // the rule: a token of this tokenizer stands for at most `per_token`
  // bytes of its input, so `bytes` bytes are at least bytes / per_token
  // tokens. A tokenizer without such a bound (0) tokenizes the text in
  // full; the body limit bounds that work.
  const size_t per_token = context_.model->tokenizer().maxInputBytesPerToken();
  if (per_token == 0) return std::nullopt;
  const auto at_least = static_cast<int64_t>((bytes + per_token - 1) / per_token);
  return refused(
      generation::checkPromptLength(
          limits(), at_least,
          absl::StrFormat("%d bytes, so at least %d tokens (a token of this model stands for at "
                          "most %d bytes)",
                          bytes, at_least, per_token)),
      field);
}

AdmissionError Admission::submitRefused(const absl::Status& status) const {
  return error(reasonFor(status), std::string(status.message()));
}

}  // namespace tandem::router
