#include "router/grpc/generate_request.h"

#include "proto/convert/sampling_params_proto.h"
#include "router/grpc/response_format_proto.h"

namespace tandem::router {

GrpcGeneration toGeneration(const tandem::v1::GenerateRequest& request,
                            const std::string& served_model) {
  GrpcGeneration out;
  openai::GenerationRequest& parsed = out.request;
  parsed.model = request.model().empty() ? served_model : request.model();
  openai::Prompt prompt;
  if (request.has_token_ids()) {
    prompt.is_tokens = true;
    prompt.token_ids.assign(request.token_ids().ids().begin(), request.token_ids().ids().end());
  } else if (request.has_text() && !request.text().empty()) {
    prompt.text = request.text();
  } else {
    prompt.is_tokens = true;  // unset or "": no tokens, an empty prompt
  }
  parsed.prompts.push_back(std::move(prompt));
  tandem::v1::SamplingParams wire_params = request.params();
  out.score_only = wire_params.has_max_tokens() && wire_params.max_tokens() == 0 &&
                   wire_params.has_prompt_logprobs();
  if (out.score_only) wire_params.set_max_tokens(1);
  absl::StatusOr<generation::SamplingParams> params = rpc::fromProto(wire_params);
  if (params.ok()) {
    absl::StatusOr<std::string> grammar = requestGrammar(request);
    if (grammar.ok()) {
      params->grammar = std::move(*grammar);
    } else {
      params = grammar.status();
    }
  }
  out.prompt_logprobs = params.ok() && params->prompt_logprobs.has_value();
  if (params.ok()) {
    parsed.sampling = *std::move(params);
  } else {
    out.params = params.status();
  }
  parsed.max_tokens_set = request.params().has_max_tokens();
  return out;
}

}  // namespace tandem::router
