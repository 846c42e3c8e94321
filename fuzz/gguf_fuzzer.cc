// A GGUF file as a worker (weights, model config) and the router (the
// embedded vocabulary, the chat template) read it: formats/gguf_file.h
// parses it; every metadata value is read through the typed accessors; the
// model configuration (server/model/model_config.h) and the tokenizer
// (text/tokenizer) are built from it, and the tokenizer runs.
// Input: the file.
#include <cstddef>
#include <cstdint>

#include "formats/gguf_file.h"
#include "fuzz/memory_file.h"
#include "server/model/model_config.h"
#include "text/tokenizer/tokenizer.h"

using tandem::model::GgufFile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::fuzz::MemoryFile file(data, size);
  auto gguf = GgufFile::open(file.path());
  if (!gguf.ok()) return 0;
  const GgufFile& g = **gguf;
  for (const auto& [key, value] : g.metadata()) {
    (void)g.getString(key);
    (void)g.getInt(key);
    (void)g.getFloat(key);
    (void)g.getBool(key);
    (void)g.getStringArray(key);
    (void)g.getIntArray(key);
    (void)g.getFloatArray(key);
  }
  const uint64_t file_size = g.file()->size();
  for (const auto& t : g.tensors()) {
    if (t.offset > file_size || t.bytes > file_size - t.offset) __builtin_trap();
    // touch the first and last byte: ASan catches a pointer outside the mapping.
    if (t.bytes > 0) {
      volatile uint8_t first = t.data[0], last = t.data[t.bytes - 1];
      (void)first;
      (void)last;
    }
    (void)g.findTensor(t.name);
  }
  (void)tandem::model::ModelConfig::fromGguf(g);
  auto tok = tandem::tokenizer::Tokenizer::fromGguf(g);
  if (tok.ok()) {
    auto ids = (*tok)->encode("Hello world! 3.14 naïve 你好 🙂 <s>", true);
    (void)(*tok)->decode(ids, false);
  }
  return 0;
}
