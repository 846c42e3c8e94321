#include "formats/safetensors_file.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace tandem::model {

namespace {

using nlohmann::json;

// a header this large is a corrupt length, not a real model (the largest
// real headers are a few megabytes).
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

struct DTypeName {
  const char* name;
  DType dtype;
  bool skipped;  // integer tensors are not weights we use
  size_t size;
};
constexpr DTypeName kDTypes[] = {
    {"F32", DType::kF32, false, 4}, {"F16", DType::kF16, false, 2},
    {"BF16", DType::kBF16, false, 2}, {"I32", DType::kI32, true, 4},
    {"I64", DType::kI32, true, 8},
};

}  // namespace

absl::StatusOr<SafetensorsFilePtr> SafetensorsFile::open(const std::string& path) {
  ASSIGN_OR_RETURN(MappedFilePtr file, MappedFile::open(path));
  auto st = std::shared_ptr<SafetensorsFile>(new SafetensorsFile());
  st->file_ = file;
  auto invalid = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", parts...));
  };
  const uint64_t size = file->size();
  if (size < 8) {
    return absl::DataLossError(absl::StrCat(path, ": truncated safetensors file (", size,
                                            " bytes, no header length)"));
  }
  uint64_t header_len = 0;
  std::memcpy(&header_len, file->data(), 8);
  if (header_len > size - 8) {
    return absl::DataLossError(absl::StrCat(path, ": header length ", header_len,
                                            " exceeds the file size ", size));
  }
  if (header_len > kMaxHeaderBytes) return invalid("header length ", header_len, " is absurd");
  const char* begin = reinterpret_cast<const char*>(file->data()) + 8;
  json header = json::parse(begin, begin + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return invalid("invalid JSON header");
  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = size - data_start;
  try {
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        if (!entry.is_object()) return invalid("__metadata__ is not an object");
        for (const auto& [k, v] : entry.items()) {
          if (v.is_string()) st->metadata_[k] = v.get<std::string>();
        }
        continue;
      }
      if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
          !entry.contains("shape") || !entry["shape"].is_array() ||
          !entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
          entry["data_offsets"].size() != 2) {
        return invalid("tensor ", name, " needs dtype, shape and two data_offsets");
      }
      std::string dtype_name = entry["dtype"].get<std::string>();
      const DTypeName* dt = nullptr;
      for (const DTypeName& d : kDTypes) {
        if (dtype_name == d.name) dt = &d;
      }
      if (dt == nullptr) {
        return invalid("tensor ", name, " has unsupported dtype ", dtype_name,
                       " (supported: F32, F16, BF16)");
      }
      SafetensorsTensor t;
      t.dtype = dt->dtype;
      uint64_t numel = 1;
      for (const json& d : entry["shape"]) {
        if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 40)) {
          return invalid("tensor ", name, " has an invalid shape ", entry["shape"].dump());
        }
        uint64_t v = d.get<uint64_t>();
        if (v != 0 && numel > (uint64_t{1} << 40) / v) {
          return invalid("tensor ", name, " has an absurd shape ", entry["shape"].dump());
        }
        numel *= v;
        t.shape.push_back(static_cast<int64_t>(v));
      }
      const json& off = entry["data_offsets"];
      if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
        return invalid("tensor ", name, " has invalid data_offsets");
      }
      uint64_t lo = off[0].get<uint64_t>(), hi = off[1].get<uint64_t>();
      if (lo > hi || hi > data_size) {
        return absl::DataLossError(absl::StrCat(
            path, ": tensor ", name, " data_offsets [", lo, ", ", hi,
            ") lie outside the data section of ", data_size, " bytes"));
      }
      if (hi - lo != numel * dt->size) {
        return invalid("tensor ", name, " holds ", hi - lo, " bytes but its dtype ",
                       dtype_name, " and shape ", entry["shape"].dump(), " need ",
                       numel * dt->size);
      }
      if (dt->skipped) continue;
      t.data = file->data() + data_start + lo;
      t.bytes = hi - lo;
      st->tensors_.emplace(name, std::move(t));
    }
  } catch (const std::exception& e) {
    return invalid("malformed header: ", e.what());
  }
  return SafetensorsFilePtr(std::move(st));
}

}  // namespace tandem::model
