// A request's `grammar` (GBNF, HTTP completions/chat or gRPC
// SamplingParams.grammar): parsed and lowered with every size limit of
// text/grammar/grammar_parser.h, then walked through its automaton under a
// token budget (grammar_walk.h).
// Input: byte 0 is the budget (1..64, low 6 bits) and the walk's seed, the
// rest is the grammar text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/grammar_walk.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tandem::fuzz::storiesVocabulary();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  tandem::fuzz::walkGrammar(text, 1 + (data[0] & 63), data[0]);
  return 0;
}
