// The generation value types (generation/) under the names the engine has
// always used: the engine produces what the front ends consume.
#pragma once

#include "generation/sampling_params.h"
#include "generation/token_output.h"

namespace tandem::engine {

using generation::FinishReason;
using generation::SamplingParams;
using generation::SeqId;
using generation::PromptTokenLogprob;
using generation::TokenLogprob;
using generation::TokenOutput;

}  // namespace tandem::engine
