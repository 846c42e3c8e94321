#include "proto/convert/prompt_logprobs_proto.h"

namespace tandem::rpc {

void appendPromptLogprobs(std::span<const generation::PromptTokenLogprob> scores,
                          PromptLogprobsProto* out) {
  out->Reserve(out->size() + static_cast<int>(scores.size()));
  for (const generation::PromptTokenLogprob& s : scores) {
    tandem::v1::PromptLogprob* entry = out->Add();
    entry->set_token_id(s.token);
    entry->set_logprob(s.logprob);
    entry->set_rank(s.rank);
    for (const generation::TokenLogprob& t : s.top_logprobs) {
      tandem::v1::TokenLogprob* top = entry->add_top();
      top->set_token_id(t.token);
      top->set_logprob(t.logprob);
    }
  }
}

void appendPromptLogprobs(const PromptLogprobsProto& in,
                          std::vector<generation::PromptTokenLogprob>* out) {
  out->reserve(out->size() + in.size());
  for (const tandem::v1::PromptLogprob& entry : in) {
    if (!entry.has_logprob()) continue;
    generation::PromptTokenLogprob s;
    s.token = entry.token_id();
    s.logprob = entry.logprob();
    s.rank = entry.rank();
    s.top_logprobs.reserve(entry.top_size());
    for (const tandem::v1::TokenLogprob& t : entry.top()) s.top_logprobs.push_back({t.token_id(), t.logprob()});
    out->push_back(std::move(s));
  }
}

}  // namespace tandem::rpc
