#include <algorithm>

#include "planner/planner_types.h"

namespace tandem::planner {

void PromptMix::add(double prompt, double uncached, double output) {
  const size_t k = prompt_mix::rangeOf(prompt);
  requests[k] += 1;
  prompt_tokens[k] += prompt;
  uncached_tokens[k] += std::clamp(uncached, 0.0, prompt);
  output_tokens[k] += output;
  prompt_x_output[k] += prompt * output;
}

double PromptMix::total() const {
  double n = 0;
  for (double r : requests) n += r;
  return n;
}

void PromptMix::blend(const PromptMix& other, double decay) {
  for (size_t k = 0; k < kRanges; ++k) {
    requests[k] = requests[k] * decay + other.requests[k];
    prompt_tokens[k] = prompt_tokens[k] * decay + other.prompt_tokens[k];
    uncached_tokens[k] = uncached_tokens[k] * decay + other.uncached_tokens[k];
    output_tokens[k] = output_tokens[k] * decay + other.output_tokens[k];
    prompt_x_output[k] = prompt_x_output[k] * decay + other.prompt_x_output[k];
  }
}

}  // namespace tandem::planner
