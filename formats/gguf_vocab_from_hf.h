// Converts an HF tokenizer directory (tokenizer.json, tokenizer_config.json)
// into the tokenizer.* keys of a GGUF file, the way llama.cpp's
// convert_hf_to_gguf.py does, so that llama.cpp and our GGUF tokenizer
// tokenize exactly as the tokenizer.json does.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace tandem::model {

class GgufWriter;

// adds the tokenizer.* keys for the tokenizer in `dir` to `writer`:
//  - byte-level BPE (a ByteLevel pre-tokenizer): tokenizer.ggml.model "gpt2",
//    tokenizer.ggml.pre from the split regex (llama-bpe, qwen2, gpt-2), the
//    merges as "a b" strings;
//  - BPE with byte_fallback (SentencePiece-style): model "llama", scores =
//    -(rank of the first merge that makes the token), add_space_prefix;
// and for both: every id 0..vocab_size-1 in order (ids the file lacks are
// unused "[PAD<i>]"), token types, special ids from tokenizer_config.json,
// add_bos_token/add_eos_token as our HF tokenizer loader applies them, and
// the chat template. `vocab_size` must cover every id of the file.
// InvalidArgument for unreadable files, Unimplemented for other tokenizer
// kinds (Unigram, WordPiece, an unknown split regex).
absl::Status addGgufVocabFromHf(const std::string& dir, int vocab_size, GgufWriter* writer);

// the id of the special token tokenizer_config.json names under `key`
// ("bos_token": "<s>" or {"content": "<s>"}), looked up in the added tokens
// first, then in the model vocab; -1 when absent or unknown.
int hfSpecialTokenId(const nlohmann::json& config, const char* key, const nlohmann::json& vocab,
                     const nlohmann::json& added_tokens);

}  // namespace tandem::model
