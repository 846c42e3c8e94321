// Builds a Tokenizer from an HF tokenizer.json (model type "BPE": byte-level
// like Llama 3 and Qwen, or SentencePiece-style with byte fallback like
// Llama 2), with tokenizer_config.json for the BOS/EOS settings.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::tokenizer {

// reads <dir>/tokenizer.json and, when present, <dir>/tokenizer_config.json.
// NotFound without tokenizer.json; InvalidArgument naming the file for bad
// JSON or an unsupported model/normalizer/pre-tokenizer/decoder.
absl::StatusOr<TokenizerPtr> loadHfTokenizer(const std::string& dir);

// the same from the files' contents; `config_json` may be empty. `name`
// labels errors.
absl::StatusOr<TokenizerPtr> parseHfTokenizer(std::string_view tokenizer_json,
                                              std::string_view config_json,
                                              const std::string& name);

}  // namespace tandem::tokenizer
