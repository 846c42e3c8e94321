// Writes a .safetensors file tensor by tensor, streaming the data so that a
// model larger than memory can be written.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/dtype.h"
#include "formats/tensor_fill.h"

namespace tandem::model {

class SafetensorsWriter {
 public:
  // declares the next tensor (f32, f16 or bf16); data comes from write()'s fill.
  void addTensor(std::string name, DType dtype, std::vector<int64_t> shape);
  void setMetadata(std::string key, std::string value) { metadata_[std::move(key)] = std::move(value); }

  // writes the header, then every tensor in the order added, asking `fill`
  // for its values. The header is padded with spaces to 8 bytes, as the
  // reference implementation does.
  absl::Status write(const std::string& path, const TensorFill& fill) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Entry> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace tandem::model
