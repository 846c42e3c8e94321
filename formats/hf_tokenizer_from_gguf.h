// Writes the vocabulary embedded in a GGUF file (tokenizer.ggml.*) as an HF
// tokenizer.json + tokenizer_config.json that tokenize exactly as the GGUF
// vocabulary does in llama.cpp (and in our GGUF tokenizer).
#pragma once

#include <string>

#include "absl/status/status.h"

namespace tandem::model {

class GgufFile;

// writes `dir`/tokenizer.json and `dir`/tokenizer_config.json (the directory
// must exist) for the vocabulary of `gguf`:
//  - tokenizer.ggml.model "llama" (SentencePiece): a BPE model with
//    byte_fallback whose merges are, as transformers' LlamaConverter derives
//    them, every split of a token into two tokens, ordered by the joined
//    token's score; Prepend/Replace normalizer when add_space_prefix;
//  - "gpt2": a byte-level BPE with the GGUF merges and the split regex that
//    tokenizer.ggml.pre names;
// control and user-defined tokens become added tokens (special for control).
// bos/eos/unk, add_bos_token/add_eos_token and tokenizer.chat_template go to
// tokenizer_config.json. Unimplemented for other tokenizer models or an
// unknown pre-tokenizer; InvalidArgument for inconsistent arrays.
absl::Status writeHfTokenizerFromGguf(const GgufFile& gguf, const std::string& dir);

}  // namespace tandem::model
