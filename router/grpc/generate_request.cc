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
  absl::StatusOr<generation::SamplingParams> params = rpc::fromProto(request.params());
  if (params.ok()) {
    absl::StatusOr<std::string> grammar = requestGrammar(request);
    if (grammar.ok()) {
      params->grammar = std::move(*grammar);
    } else {
      params = grammar.status();
    }
  }
  if (params.ok()) {
    parsed.sampling = *std::move(params);
  } else {
    out.params = params.status();
  }
  parsed.max_tokens_set = request.params().has_max_tokens();
  return out;
}

}  // namespace tandem::router
