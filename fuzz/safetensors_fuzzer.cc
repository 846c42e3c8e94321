// A .safetensors file as a worker maps it (formats/safetensors_file.h): the
// 8-byte header length, the JSON header (dtypes, shapes, data_offsets), the
// tensors pointing into the mapping. Every tensor's bytes must lie inside
// the file and agree with its dtype and shape.
// Input: the file.
#include <cstddef>
#include <cstdint>

#include "formats/safetensors_file.h"
#include "fuzz/memory_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::fuzz::MemoryFile file(data, size);
  auto st = tandem::model::SafetensorsFile::open(file.path());
  if (!st.ok()) return 0;
  const uint8_t* begin = (*st)->file()->data();
  const uint8_t* end = begin + (*st)->file()->size();
  for (const auto& [name, t] : (*st)->tensors()) {
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) __builtin_trap();
      numel *= static_cast<uint64_t>(d);
    }
    if (t.bytes > 0 && (t.data < begin || t.data > end || t.bytes > static_cast<uint64_t>(end - t.data))) {
      __builtin_trap();
    }
    if (t.bytes > 0) {
      volatile uint8_t first = t.data[0], last = t.data[t.bytes - 1];
      (void)first;
      (void)last;
    }
  }
  return 0;
}
