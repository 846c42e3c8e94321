#include "proto/convert/sampling_params_proto.h"

namespace tandem::rpc {

absl::StatusOr<generation::SamplingParams> fromProto(const tandem::v1::SamplingParams& p) {
  generation::SamplingParams s;
  if (p.has_temperature()) s.temperature = p.temperature();
  if (p.has_top_p()) s.top_p = p.top_p();
  if (p.has_top_k()) s.top_k = p.top_k();
  if (p.has_min_p()) s.min_p = p.min_p();
  if (p.has_presence_penalty()) s.presence_penalty = p.presence_penalty();
  if (p.has_frequency_penalty()) s.frequency_penalty = p.frequency_penalty();
  if (p.has_repetition_penalty()) s.repetition_penalty = p.repetition_penalty();
  if (p.has_seed()) s.seed = p.seed();
  if (p.has_max_tokens()) s.max_tokens = p.max_tokens();
  s.stop_token_ids.assign(p.stop_token_ids().begin(), p.stop_token_ids().end());
  s.ignore_eos = p.ignore_eos();
  if (p.top_logprobs() < 0) return absl::InvalidArgumentError("top_logprobs must be >= 0");
  if (p.top_logprobs() > 0) s.logprobs = p.top_logprobs();
  if (p.has_logprobs()) {
    if (p.logprobs() < 0) return absl::InvalidArgumentError("logprobs must be >= 0");
    s.logprobs = p.logprobs();
  }
  if (p.logit_bias_size() > generation::SamplingParams::kMaxLogitBias) {
    return absl::InvalidArgumentError("logit_bias holds too many entries");
  }
  for (const tandem::v1::TokenBias& b : p.logit_bias()) s.logit_bias.emplace_back(b.token_id(), b.bias());
  s.grammar = p.grammar();
  if (p.has_prompt_logprobs()) s.prompt_logprobs = p.prompt_logprobs();
  absl::Status status = s.validate();
  if (!status.ok()) return status;
  return s;
}

tandem::v1::SamplingParams toProto(const generation::SamplingParams& s,
                                   const std::vector<std::string>& stop) {
  tandem::v1::SamplingParams p;
  p.set_temperature(s.temperature);
  p.set_top_p(s.top_p);
  p.set_top_k(s.top_k);
  p.set_min_p(s.min_p);
  p.set_presence_penalty(s.presence_penalty);
  p.set_frequency_penalty(s.frequency_penalty);
  p.set_repetition_penalty(s.repetition_penalty);
  if (s.seed) p.set_seed(*s.seed);
  p.set_max_tokens(s.max_tokens);
  for (const std::string& x : stop) p.add_stop(x);
  for (int32_t id : s.stop_token_ids) p.add_stop_token_ids(id);
  p.set_ignore_eos(s.ignore_eos);
  p.set_top_logprobs(s.logprobs.value_or(0));
  if (s.logprobs) p.set_logprobs(*s.logprobs);
  for (const auto& [id, bias] : s.logit_bias) {
    tandem::v1::TokenBias* b = p.add_logit_bias();
    b->set_token_id(id);
    b->set_bias(bias);
  }
  p.set_grammar(s.grammar);
  if (s.prompt_logprobs) p.set_prompt_logprobs(*s.prompt_logprobs);
  return p;
}

}  // namespace tandem::rpc
