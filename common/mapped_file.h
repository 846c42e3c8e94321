// A read-only memory mapping of a whole file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tandem {

class MappedFile;
using MappedFilePtr = std::shared_ptr<const MappedFile>;

class MappedFile {
 public:
  // maps `path` read-only. Fails with NotFound when the file is missing and
  // with a message naming the file on any other error. An empty file maps to
  // size() == 0 and data() == nullptr.
  static absl::StatusOr<MappedFilePtr> open(const std::string& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  std::string_view view() const {
    return {reinterpret_cast<const char*>(data_), size_};
  }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

// reads a whole file into a string (for small text files such as JSON).
absl::StatusOr<std::string> readFile(const std::string& path);

// readFile for a file a flag names, `what` saying what it holds ("cluster
// secret"): NotFound "cannot read the WHAT file 'PATH'", InvalidArgument
// when it is empty.
absl::StatusOr<std::string> readNamedFile(const std::string& path, const char* what);

// writes `contents` to `path`, replacing it.
absl::Status writeFile(const std::string& path, std::string_view contents);

}  // namespace tandem
