// What the request fuzz targets render and tokenize with, loaded once per
// process: a real chat template (Qwen3's, which reads tools, tool calls and
// reasoning) and the embedded model's tokenizer. A file that will not load
// stops the target at once (__builtin_trap): the seeds would prove nothing.
#pragma once

#include "common/mapped_file.h"
#include "text/chat/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::fuzz {

inline const chat::ChatTemplate& qwen3Template() {
  static const chat::ChatTemplatePtr t = [] {
    auto source = readFile(TANDEM_FUZZ_DIR "/corpus/chat_template/qwen3.jinja");
    if (!source.ok()) __builtin_trap();
    auto parsed = chat::ChatTemplate::parse(*source);
    if (!parsed.ok()) __builtin_trap();
    (*parsed)->setSpecialTokens("", "<|im_end|>");
    return std::move(*parsed);
  }();
  return *t;
}

inline const tokenizer::Tokenizer& storiesTokenizer() {
  static const tokenizer::TokenizerPtr t = [] {
    auto loaded = tokenizer::Tokenizer::fromHfDir(TANDEM_SOURCE_DIR "/models/stories260K/hf");
    if (!loaded.ok()) __builtin_trap();
    return std::move(*loaded);
  }();
  return *t;
}

// loads both (a target's LLVMFuzzerInitialize), so the first input is not
// charged for it.
inline void loadChatFixtures() {
  qwen3Template();
  storiesTokenizer();
}

}  // namespace tandem::fuzz
