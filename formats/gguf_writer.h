// Writes a GGUF v3 file: metadata in the order set, tensor infos with
// llama.cpp's reversed dimension order, and data aligned to 32 bytes,
// streamed tensor by tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/dtype.h"
#include "formats/gguf_file.h"
#include "formats/tensor_fill.h"

namespace tandem::model {

class GgufWriter {
 public:
  // each setter adds a key, or replaces its value keeping its position.
  void setString(const std::string& key, std::string_view value);
  void setU32(const std::string& key, uint32_t value);
  void setF32(const std::string& key, float value);
  void setBool(const std::string& key, bool value);
  void setStringArray(const std::string& key, const std::vector<std::string>& values);
  void setI32Array(const std::string& key, const std::vector<int32_t>& values);
  void setF32Array(const std::string& key, const std::vector<float>& values);
  // copies a value parsed from another GGUF file, keeping its exact type.
  void setValue(const std::string& key, const GgufValue& value);

  // declares the next tensor (f32, f16, bf16, or q8_0/q4_0/q4_k/q6_k with
  // rows of whole blocks) with its row-major shape.
  void addTensor(std::string name, DType dtype, std::vector<int64_t> shape);

  absl::Status write(const std::string& path, const TensorFill& fill) const;

 private:
  void set(const std::string& key, GgufType type, std::string encoded);

  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<std::pair<std::string, std::string>> kvs_;  // key, type + value bytes
  std::map<std::string, size_t> kv_index_;
  std::vector<Entry> tensors_;
};

}  // namespace tandem::model
