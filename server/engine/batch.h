// The one value the scheduler hands the model runner each step (as vLLM's
// SchedulerOutput): which tokens of which sequences to compute, where their
// KV lives, and which rows need logits. Block-pool internals never appear here.
#pragma once

#include <cstdint>
#include <vector>

#include "generation/sampling_params.h"
#include "generation/token_output.h"

namespace tandem::engine {


struct SequenceChunk {
  generation::SeqId seq_id = 0;
  // tokens to compute this step: a prefill chunk, or the one token of a decode.
  std::vector<int32_t> tokens;
  // position of tokens[0]; positions [0, start_pos) are already in the cache.
  int32_t start_pos = 0;
  // physical KV block ids covering positions [0, start_pos + tokens.size()),
  // block i holding positions [i * block_size, (i + 1) * block_size).
  std::vector<int32_t> block_table;
  // whether the runner must return logits for the chunk's last token (false
  // for a prefill chunk that does not reach the end of the prompt).
  bool needs_logits = true;
  // whether the runner must return logits for every token of the chunk (a
  // request scoring its prompt: generation::SamplingParams::prompt_logprobs); the last
  // of them is the row needs_logits samples.
  bool all_logits = false;

  // the rows of logits the runner returns for this chunk.
  int numLogitRows() const {
    if (all_logits) return static_cast<int>(tokens.size());
    return needs_logits ? 1 : 0;
  }
};

struct Batch {
  std::vector<SequenceChunk> seqs;

  int numTokens() const {
    int n = 0;
    for (const auto& s : seqs) n += static_cast<int>(s.tokens.size());
    return n;
  }
  int numLogitRows() const {
    int n = 0;
    for (const auto& s : seqs) n += s.numLogitRows();
    return n;
  }
  // the rows sampled: one per chunk with needs_logits.
  int numSampledRows() const {
    int n = 0;
    for (const auto& s : seqs) n += s.needs_logits ? 1 : 0;
    return n;
  }
};

}  // namespace tandem::engine
