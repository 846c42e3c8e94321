// What a tandem.v1.Inference/Generate request asks, in the admission's
// terms: the code InferenceGenerateCall runs on a request once it parsed (and the
// gRPC fuzz target drives, fuzz/grpc_generate_request_fuzzer.cc).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "router/openai/openai_request.h"
#include "tandem/v1/inference.pb.h"

namespace tandem::router {

struct GrpcGeneration {
  // the model ("" names the served one), one prompt (text or token ids;
  // neither, or "", is an empty prompt), the sampling params and the
  // structured-output grammar when `params` is OK.
  openai::GenerationRequest request;
  // the first problem with the params or the grammar (InvalidArgument):
  // reported after the admission's checks of the model and the prompt, as
  // HTTP reports them.
  absl::Status params;
  // max_tokens 0 with prompt_logprobs: the prompt is scored, nothing is
  // generated (the generator is asked for one token, which is dropped, as
  // vLLM does for echo with max_tokens 0).
  bool score_only = false;
  // the request asks for its prompt's logprobs.
  bool prompt_logprobs = false;
};

GrpcGeneration toGeneration(const tandem::v1::GenerateRequest& request,
                            const std::string& served_model);

}  // namespace tandem::router
