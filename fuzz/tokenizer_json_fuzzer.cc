// An HF tokenizer.json (and tokenizer_config.json) as the router and the
// workers load it from a model directory (text/tokenizer/hf_tokenizer_loader.h):
// parse, then encode and decode a text that touches every pre-tokenizer path
// (spaces, digits, punctuation, non-Latin scripts, emoji, special tokens).
// Input: tokenizer.json, optionally followed by a NUL byte and
// tokenizer_config.json.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "text/tokenizer/hf_tokenizer_loader.h"

namespace {
constexpr std::string_view kSample =
    "Hello world!  It's 2024: 3.14159 apples\n\tcost $12,345. "
    "naïve café — 你好，世界 こんにちは 🙂🚀 <s></s><|im_start|><|eot_id|> \xff\xfe end";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view json = input, config;
  if (size_t nul = input.find('\0'); nul != std::string_view::npos) {
    json = input.substr(0, nul);
    config = input.substr(nul + 1);
  }
  auto tok = tandem::tokenizer::parseHfTokenizer(json, config, "fuzz");
  if (!tok.ok()) return 0;
  const auto& t = **tok;
  for (bool special : {false, true}) {
    std::vector<tandem::tokenizer::TokenId> ids = t.encode(kSample, special);
    for (auto id : ids) {
      if (id < 0 || id >= t.vocabSize()) __builtin_trap();
    }
    (void)t.decode(ids, /*skip_special=*/special);
  }
  // ids a client may send (token-id prompts, echoed back): out of range decodes to nothing.
  (void)t.decode({-1, 0, t.vocabSize() - 1, t.vocabSize(), INT32_MAX}, /*skip_special=*/false);
  (void)t.tokenToId("<s>");
  if (auto bos = t.bosId()) (void)t.tokenBytes(*bos);
  if (auto eos = t.eosId()) (void)t.isSpecial(*eos);
  return 0;
}
