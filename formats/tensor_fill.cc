#include "formats/tensor_fill.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/quant_blocks.h"
#include "common/quantize.h"

namespace tandem::model {

void appendAs(DType dtype, const float* values, size_t count, std::string* bytes) {
  size_t at = bytes->size();
  if (quant::isQuantized(dtype)) {
    bytes->resize(at + rowBytes(dtype, count));
    quant::quantizeRow(dtype, values, bytes->data() + at, static_cast<int64_t>(count));
    return;
  }
  if (dtype == DType::kF32) {
    bytes->resize(at + count * 4);
    std::memcpy(bytes->data() + at, values, count * 4);
    return;
  }
  bytes->resize(at + count * 2);
  for (size_t i = 0; i < count; ++i) {
    uint16_t h = dtype == DType::kF16 ? f32ToF16(values[i]) : f32ToBf16(values[i]);
    std::memcpy(bytes->data() + at + 2 * i, &h, 2);
  }
}

absl::Status streamTensor(std::FILE* out, const std::string& path, size_t tensor, uint64_t numel,
                          DType dtype, const TensorFill& fill) {
  // 1M elements a chunk: a few megabytes of buffers whatever the model size.
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  std::vector<float> values;
  std::string bytes;
  for (uint64_t first = 0; first < numel; first += kChunk) {
    size_t count = static_cast<size_t>(std::min(kChunk, numel - first));
    values.resize(count);
    fill(tensor, first, count, values.data());
    bytes.clear();
    appendAs(dtype, values.data(), count, &bytes);
    if (std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size()) {
      return absl::InternalError(absl::StrCat(path, ": write failed"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem::model
