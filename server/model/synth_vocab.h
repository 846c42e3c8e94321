// The vocabulary a synthesized model borrows (--vocab-from): its size and
// special ids, and how it is written into a GGUF file.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/gguf_file.h"
#include "server/model/model_config.h"

namespace tandem::model {

class GgufWriter;

struct SynthVocab {
  enum class Kind { kNone, kGguf, kHfDir };
  Kind kind = Kind::kNone;
  std::string source;  // the --vocab-from path
  GgufFilePtr gguf;    // for kGguf
  int size = 0;        // number of tokens (0 for kNone)
  int bos = -1;
  std::vector<int> eos;
};

// an empty path gives kNone; a directory must hold tokenizer.json (its size
// is the largest id + 1 over the vocab and added tokens; bos/eos come from
// tokenizer_config.json); a file must be a GGUF with tokenizer.ggml.tokens.
absl::StatusOr<SynthVocab> loadSynthVocab(const std::string& path);

// adds the tokenizer.* keys for `vocab` to a GGUF being written: every
// tokenizer.* key of a GGUF source (token arrays padded with unused
// "[PAD<i>]" tokens up to config.vocab_size, as llama.cpp's converter does),
// the keys converted from an HF tokenizer directory (gguf_vocab_from_hf.h),
// or tokenizer.ggml.model = "no_vocab" without one.
absl::Status addGgufVocab(const SynthVocab& vocab, const ModelConfig& config, GgufWriter* writer);

}  // namespace tandem::model
