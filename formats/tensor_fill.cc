#include "formats/tensor_fill.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>
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
  // 1M elements a chunk: a few megabytes of buffers a thread whatever the
  // model size; a core's chunk at a time (an 8B-parameter model is 16 GB
  // of F16 to generate, and quantizing it is slower still).
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  const uint64_t chunks = (numel + kChunk - 1) / kChunk;
  const size_t threads = static_cast<size_t>(
      std::clamp<uint64_t>(std::thread::hardware_concurrency(), 1, std::max<uint64_t>(chunks, 1)));
  std::vector<std::vector<float>> values(threads);
  std::vector<std::string> bytes(threads);
  for (uint64_t c0 = 0; c0 < chunks; c0 += threads) {
    const size_t batch = static_cast<size_t>(std::min<uint64_t>(threads, chunks - c0));
    auto convert = [&](size_t i) {
      const uint64_t first = (c0 + i) * kChunk;
      const size_t count = static_cast<size_t>(std::min(kChunk, numel - first));
      values[i].resize(count);
      fill(tensor, first, count, values[i].data());
      bytes[i].clear();
      appendAs(dtype, values[i].data(), count, &bytes[i]);
    };
    std::vector<std::thread> pool;
    for (size_t i = 1; i < batch; ++i) pool.emplace_back(convert, i);
    convert(0);
    for (std::thread& t : pool) t.join();
    for (size_t i = 0; i < batch; ++i) {
      if (std::fwrite(bytes[i].data(), 1, bytes[i].size(), out) != bytes[i].size()) {
        return absl::InternalError(absl::StrCat(path, ": write failed"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem::model
