#include "formats/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace tandem::model {

namespace {

constexpr uint64_t kAlignment = 32;

template <typename T>
void put(std::string* s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s->append(b, sizeof(T));
}

void putString(std::string* s, std::string_view v) {
  put<uint64_t>(s, v.size());
  s->append(v);
}

// one scalar of GGUF type `t` from its widened value.
void putScalar(std::string* s, GgufType t, const std::variant<int64_t, double, std::string_view>& v) {
  switch (t) {
    case GgufType::kU8: case GgufType::kBool: put<uint8_t>(s, std::get<int64_t>(v)); break;
    case GgufType::kI8: put<int8_t>(s, std::get<int64_t>(v)); break;
    case GgufType::kU16: put<uint16_t>(s, std::get<int64_t>(v)); break;
    case GgufType::kI16: put<int16_t>(s, std::get<int64_t>(v)); break;
    case GgufType::kU32: put<uint32_t>(s, std::get<int64_t>(v)); break;
    case GgufType::kI32: put<int32_t>(s, std::get<int64_t>(v)); break;
    case GgufType::kU64: put<uint64_t>(s, std::get<int64_t>(v)); break;
    case GgufType::kI64: put<int64_t>(s, std::get<int64_t>(v)); break;
    case GgufType::kF32: put<float>(s, static_cast<float>(std::get<double>(v))); break;
    case GgufType::kF64: put<double>(s, std::get<double>(v)); break;
    case GgufType::kString: putString(s, std::get<std::string_view>(v)); break;
    case GgufType::kArray: break;  // the parser never produces nested arrays
  }
}

uint32_t ggmlType(DType t) {
  switch (t) {
    case DType::kF16: return 1;
    case DType::kBF16: return 30;
    case DType::kQ4_0: return 2;
    case DType::kQ8_0: return 8;
    case DType::kQ4_K: return 12;
    case DType::kQ6_K: return 14;
    default: return 0;
  }
}

uint64_t alignUp(uint64_t x) { return (x + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

void GgufWriter::set(const std::string& key, GgufType type, std::string encoded) {
  std::string bytes;
  put<uint32_t>(&bytes, static_cast<uint32_t>(type));
  bytes += encoded;
  auto it = kv_index_.find(key);
  if (it != kv_index_.end()) {
    kvs_[it->second].second = std::move(bytes);
    return;
  }
  kv_index_[key] = kvs_.size();
  kvs_.emplace_back(key, std::move(bytes));
}

void GgufWriter::setString(const std::string& key, std::string_view value) {
  std::string s;
  putString(&s, value);
  set(key, GgufType::kString, std::move(s));
}

void GgufWriter::setU32(const std::string& key, uint32_t value) {
  std::string s;
  put(&s, value);
  set(key, GgufType::kU32, std::move(s));
}

void GgufWriter::setF32(const std::string& key, float value) {
  std::string s;
  put(&s, value);
  set(key, GgufType::kF32, std::move(s));
}

void GgufWriter::setBool(const std::string& key, bool value) {
  std::string s;
  put<uint8_t>(&s, value ? 1 : 0);
  set(key, GgufType::kBool, std::move(s));
}

void GgufWriter::setStringArray(const std::string& key, const std::vector<std::string>& values) {
  std::string s;
  put<uint32_t>(&s, static_cast<uint32_t>(GgufType::kString));
  put<uint64_t>(&s, values.size());
  for (const auto& v : values) putString(&s, v);
  set(key, GgufType::kArray, std::move(s));
}

void GgufWriter::setI32Array(const std::string& key, const std::vector<int32_t>& values) {
  std::string s;
  put<uint32_t>(&s, static_cast<uint32_t>(GgufType::kI32));
  put<uint64_t>(&s, values.size());
  for (int32_t v : values) put(&s, v);
  set(key, GgufType::kArray, std::move(s));
}

void GgufWriter::setF32Array(const std::string& key, const std::vector<float>& values) {
  std::string s;
  put<uint32_t>(&s, static_cast<uint32_t>(GgufType::kF32));
  put<uint64_t>(&s, values.size());
  for (float v : values) put(&s, v);
  set(key, GgufType::kArray, std::move(s));
}

void GgufWriter::setValue(const std::string& key, const GgufValue& value) {
  std::string s;
  if (value.type == GgufType::kArray) {
    put<uint32_t>(&s, static_cast<uint32_t>(value.array_type));
    put<uint64_t>(&s, value.array.size());
    for (const auto& e : value.array) putScalar(&s, value.array_type, e);
  } else {
    putScalar(&s, value.type, value.scalar);
  }
  set(key, value.type, std::move(s));
}

void GgufWriter::addTensor(std::string name, DType dtype, std::vector<int64_t> shape) {
  tensors_.push_back({std::move(name), dtype, std::move(shape)});
}

absl::Status GgufWriter::write(const std::string& path, const TensorFill& fill) const {
  std::string head;
  put<uint32_t>(&head, 0x46554747);  // "GGUF"
  put<uint32_t>(&head, 3);
  put<uint64_t>(&head, tensors_.size());
  put<uint64_t>(&head, kvs_.size());
  for (const auto& [key, bytes] : kvs_) {
    putString(&head, key);
    head += bytes;
  }
  uint64_t offset = 0;
  for (const Entry& e : tensors_) {
    putString(&head, e.name);
    put<uint32_t>(&head, static_cast<uint32_t>(e.shape.size()));
    for (auto d = e.shape.rbegin(); d != e.shape.rend(); ++d) put<uint64_t>(&head, *d);
    put<uint32_t>(&head, ggmlType(e.dtype));
    put<uint64_t>(&head, offset);
    offset = alignUp(offset + rowBytes(e.dtype, numelOf(e.shape)));
  }
  head.resize(alignUp(head.size()), '\0');
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (out == nullptr) return absl::InternalError(absl::StrCat(path, ": cannot create file"));
  if (std::fwrite(head.data(), 1, head.size(), out.get()) != head.size()) {
    return absl::InternalError(absl::StrCat(path, ": write failed"));
  }
  static const char kZeros[kAlignment] = {};
  for (size_t i = 0; i < tensors_.size(); ++i) {
    uint64_t bytes = rowBytes(tensors_[i].dtype, numelOf(tensors_[i].shape));
    RETURN_IF_ERROR(streamTensor(out.get(), path, i, numelOf(tensors_[i].shape),
                                 tensors_[i].dtype, fill));
    size_t pad = alignUp(bytes) - bytes;
    if (pad > 0 && std::fwrite(kZeros, 1, pad, out.get()) != pad) {
      return absl::InternalError(absl::StrCat(path, ": write failed"));
    }
  }
  if (std::fclose(out.release()) != 0) return absl::InternalError(absl::StrCat(path, ": close failed"));
  return absl::OkStatus();
}

}  // namespace tandem::model
