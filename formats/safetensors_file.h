// One .safetensors file: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and [begin, end) byte range in the data
// section that follows, then the data. The file stays mapped; tensors point
// into the mapping (zero copy).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "common/mapped_file.h"

namespace tandem::model {

struct SafetensorsTensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // into the mapping
  uint64_t bytes = 0;
};

class SafetensorsFile;
using SafetensorsFilePtr = std::shared_ptr<const SafetensorsFile>;

class SafetensorsFile {
 public:
  // maps and parses `path`. Errors (InvalidArgument or DataLoss) name the
  // file and, where it applies, the tensor: a header length past the end of
  // the file, invalid JSON, an unsupported dtype, data_offsets outside the
  // data section or disagreeing with dtype x shape. I32/I64 tensors (such as
  // position ids some exporters leave behind) are skipped, not loaded.
  static absl::StatusOr<SafetensorsFilePtr> open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  const MappedFilePtr& file() const { return file_; }
  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  // the optional "__metadata__" string map.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;

  MappedFilePtr file_;
  std::map<std::string, SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace tandem::model
