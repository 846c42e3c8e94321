// Builds a Tokenizer from the vocabulary embedded in a GGUF file
// (tokenizer.ggml.*): "llama" is SentencePiece, "gpt2" is byte-level BPE
// whose split regex follows tokenizer.ggml.pre.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::tokenizer {

absl::StatusOr<TokenizerPtr> loadGgufTokenizer(const model::GgufFile& gguf);

// the split regex llama.cpp uses for a tokenizer.ggml.pre value; nullopt
// for one this implementation does not know.
std::optional<std::string_view> splitPatternForPre(std::string_view pre);

}  // namespace tandem::tokenizer
