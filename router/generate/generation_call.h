// The skeleton every front-end call in flight shares: an OpenAI
// CompletionCall or ResponsesCall over HTTP (HttpGenerationCall below) and
// a tandem.v1.Inference/Generate call over gRPC (router/grpc). What the
// server gave it (its context and admission slot, held until the call is
// destroyed), its metrics, its lock, whether it is answered, and the
// sequences it has generating, so that a client that leaves, a model
// failure, a stop string and a slow reader all cancel them the same way.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/http/http_server.h"
#include "generation/generator.h"
#include "router/generate/admission.h"
#include "router/generate/call_context.h"
#include "router/generate/call_metrics.h"
#include "router/generate/client_gone.h"
#include "router/openai/api_error.h"

namespace tandem::router {

class GenerationCall {
 public:
  using Clock = CallMetrics::Clock;

  GenerationCall(const GenerationCall&) = delete;
  GenerationCall& operator=(const GenerationCall&) = delete;

 protected:
  // `arrival` is when the request came in; `record` (may be null) its
  // access-log record. `slot` is held until the call is destroyed.
  GenerationCall(const CallContext& context, AdmissionSlot slot, Clock::time_point arrival,
                 RequestRecordPtr record);
  ~GenerationCall() = default;

  // mu_ held: submits one sequence to the generator (its outputs go to
  // `on_output` on the generator's thread and wait for mu_); cancelAll()
  // cancels it from then on. The generator's refusal as it gave it.
  absl::StatusOr<generation::RequestId> submitSequence(std::vector<int32_t> prompt,
                                                       generation::SamplingParams params,
                                                       generation::Generator::OutputCallback on_output);
  // mu_ held: cancels every sequence submitted (the generator ignores the
  // finished ones). cancel() only queues work: the outputs it causes arrive
  // later, on the generator's thread, and wait for mu_.
  void cancelAll();

  const CallContext context_;
  std::mutex mu_;
  AdmissionSlot slot_;     // guarded by mu_
  CallMetrics metrics_;    // guarded by mu_
  // nothing more goes to the client (answered, failed, cut off or gone).
  bool answered_ = false;  // guarded by mu_

 private:
  std::vector<generation::RequestId> submitted_;  // guarded by mu_
};

// An OpenAI call over HTTP: its prompts (prepared by the admission), the
// response writer it answers through and the endpoint its metrics name.
class HttpGenerationCall : public GenerationCall {
 protected:
  HttpGenerationCall(const CallContext& context, AdmissionSlot slot, std::vector<TokenizedPrompt> prompts,
                     http::ResponseWriterPtr writer, Clock::time_point arrival, std::string endpoint);
  ~HttpGenerationCall() = default;

  // when `call`'s client goes away, it cancels everything (clientGone).
  static void watchClient(const std::shared_ptr<HttpGenerationCall>& call) {
    callOnClientGone(*call->writer_, call, &HttpGenerationCall::clientGone);
  }

  // mu_ held, nothing sent yet: answers `error` (a refusal is a plain
  // 4xx/503 even when the client asked to stream).
  void refuse(const openai::ApiError& error);
  // mu_ held: the model failed on a sequence: cancels the rest, counts a
  // 500 and answers it, as `stream_tail` when streaming (what the stream
  // says to end in error), else as an OpenAI error body.
  void failGeneration(bool streaming, const std::string& stream_tail);
  // streaming, mu_ held: when the client left too much unread
  // (router::cutOffSlowClient, naming `call` in the log), cancels
  // everything and closes; true then (the call is answered).
  bool cutOffSlowClient(const std::string& call);

  static constexpr char kModelFailed[] = "the model failed while generating";

  const std::vector<TokenizedPrompt> prompts_;
  const http::ResponseWriterPtr writer_;
  const std::string endpoint_;

 private:
  // the client went away: cancels everything; counted as 499 (nginx's
  // "client closed request") unless the call was answered already.
  void clientGone();
};

// The OpenAI calls (CompletionCall, ResponsesCall) over what differs: the
// Call and the parsed Request it answers. Call provides a constructor
// (context, slot, request, prompts, writer, arrival), submit(admission) and
// static endpointOf(request), the metrics' label; it befriends OpenAiCall.
template <typename Call, typename Request>
class OpenAiCall : public HttpGenerationCall, public std::enable_shared_from_this<Call> {
 public:
  // answers `request` (admitted already, its `prompts` prepared by the
  // admission) through `writer`: submits it to admission.context().generator
  // and answers at once with an error when the generator refuses it
  // (classified by admission.submitRefused). `slot` is held until the call
  // is destroyed; `arrival` is when the request came in.
  static void start(const Admission& admission, AdmissionSlot slot, Request request,
                    std::vector<TokenizedPrompt> prompts, http::ResponseWriterPtr writer,
                    Clock::time_point arrival) {
    std::shared_ptr<Call> call(new Call(admission.context(), std::move(slot), std::move(request),
                                        std::move(prompts), std::move(writer), arrival));
    watchClient(call);
    call->submit(admission);
  }

 protected:
  OpenAiCall(const CallContext& context, AdmissionSlot slot, Request request,
             std::vector<TokenizedPrompt> prompts, http::ResponseWriterPtr writer, Clock::time_point arrival)
      : HttpGenerationCall(context, std::move(slot), std::move(prompts), std::move(writer), arrival,
                           Call::endpointOf(request)),
        request_(std::move(request)) {}

  const Request request_;
};

}  // namespace tandem::router
