// A parsed GGUF (v2/v3) file: metadata key/values and tensor descriptors over
// a read-only mapping of the file. Parsing validates every length and offset
// against the file size, so a truncated or lying file is an error, never an
// out-of-bounds read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "common/mapped_file.h"

namespace tandem::model {

// GGUF metadata value types, numbered as in the GGUF spec.
enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6,
  kBool = 7, kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

struct GgufValue {
  GgufType type = GgufType::kU8;
  // scalars are widened: integers and bools to int64 (u64 values above
  // INT64_MAX are rejected), floats to double; strings point into the mapping.
  std::variant<int64_t, double, std::string_view> scalar;
  // for arrays: the element type and the elements (each a scalar).
  GgufType array_type = GgufType::kU8;
  std::vector<std::variant<int64_t, double, std::string_view>> array;
};

struct GgufTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  // row-major (torch) order: the reverse of GGUF's ne[] order.
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // from the start of the file
  uint64_t bytes = 0;
  const uint8_t* data = nullptr;
};

class GgufFile;
using GgufFilePtr = std::shared_ptr<const GgufFile>;

class GgufFile {
 public:
  // opens and parses `path`. Errors name the file and, where it applies, the
  // key or tensor: bad magic, unsupported version, truncation, a tensor whose
  // data runs past the end, an unknown tensor type.
  static absl::StatusOr<GgufFilePtr> open(const std::string& path);

  uint32_t version() const { return version_; }
  // the tensor data alignment (general.alignment, default 32) and the file
  // offset where the data section starts.
  uint64_t alignment() const { return alignment_; }
  uint64_t dataStart() const { return data_start_; }
  const std::string& path() const { return file_->path(); }
  const MappedFilePtr& file() const { return file_; }

  const GgufValue* find(std::string_view key) const;
  const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* findTensor(std::string_view name) const;

  // typed accessors: NotFound when the key is absent, InvalidArgument when it
  // has another type. Integer getters accept any integer type.
  absl::StatusOr<std::string_view> getString(std::string_view key) const;
  absl::StatusOr<int64_t> getInt(std::string_view key) const;
  absl::StatusOr<double> getFloat(std::string_view key) const;  // f32/f64 (or an integer)
  absl::StatusOr<bool> getBool(std::string_view key) const;
  absl::StatusOr<std::vector<std::string_view>> getStringArray(std::string_view key) const;
  absl::StatusOr<std::vector<int64_t>> getIntArray(std::string_view key) const;
  absl::StatusOr<std::vector<double>> getFloatArray(std::string_view key) const;

 private:
  GgufFile() = default;
  friend class GgufParser;

  MappedFilePtr file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_start_ = 0;
  std::map<std::string, GgufValue, std::less<>> metadata_;
  std::vector<GgufTensorInfo> tensors_;
};

}  // namespace tandem::model
