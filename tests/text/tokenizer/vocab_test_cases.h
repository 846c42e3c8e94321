// Reads llama.cpp's tokenizer vectors (tests/data/tokenizers/*.inp/.out) the
// way its test-tokenizer-0 does: inputs split on "\n__ggml_vocab_test__\n",
// expected ids one line per case, without BOS.
#pragma once

#include <string>
#include <vector>

#include "common/mapped_file.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::tokenizer::testing {

struct VocabCase {
  std::string text;
  std::vector<TokenId> ids;
};

// the whole file, or "" when it cannot be read.
inline std::string readAll(const std::string& path) { return readFile(path).value_or(""); }

inline std::vector<std::string> splitOn(const std::string& s, const std::string& delimiter) {
  std::vector<std::string> out;
  size_t start = 0, end;
  while ((end = s.find(delimiter, start)) != std::string::npos) {
    out.push_back(s.substr(start, end - start));
    start = end + delimiter.size();
  }
  out.push_back(s.substr(start));
  return out;
}

// the cases of `<base>.inp` / `<base>.out`; empty when the files disagree.
inline std::vector<VocabCase> readVocabCases(const std::string& base) {
  std::vector<std::string> inputs = splitOn(readAll(base + ".inp"), "\n__ggml_vocab_test__\n");
  std::vector<std::string> outputs = splitOn(readAll(base + ".out"), "\n");
  std::vector<VocabCase> cases;
  if (inputs.size() != outputs.size()) return cases;
  for (size_t i = 0; i < inputs.size(); ++i) {
    VocabCase c{inputs[i], {}};
    std::istringstream ids(outputs[i]);
    for (TokenId id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace tandem::tokenizer::testing
