#include "formats/safetensors_writer.h"

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace tandem::model {

namespace {

const char* safetensorsDtype(DType t) {
  switch (t) {
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    default: return "F32";
  }
}

}  // namespace

void SafetensorsWriter::addTensor(std::string name, DType dtype, std::vector<int64_t> shape) {
  tensors_.push_back({std::move(name), dtype, std::move(shape)});
}

absl::Status SafetensorsWriter::write(const std::string& path, const TensorFill& fill) const {
  // nlohmann's ordered_json keeps file order, so the header is deterministic.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const Entry& e : tensors_) {
    uint64_t bytes = numelOf(e.shape) * dtypeSize(e.dtype);
    header[e.name] = {{"dtype", safetensorsDtype(e.dtype)},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (out == nullptr) return absl::InternalError(absl::StrCat(path, ": cannot create file"));
  uint64_t len = text.size();
  if (std::fwrite(&len, 8, 1, out.get()) != 1 ||
      std::fwrite(text.data(), 1, text.size(), out.get()) != text.size()) {
    return absl::InternalError(absl::StrCat(path, ": write failed"));
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    RETURN_IF_ERROR(streamTensor(out.get(), path, i, numelOf(tensors_[i].shape),
                                 tensors_[i].dtype, fill));
  }
  if (std::fclose(out.release()) != 0) return absl::InternalError(absl::StrCat(path, ": close failed"));
  return absl::OkStatus();
}

}  // namespace tandem::model
