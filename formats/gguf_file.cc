#include "formats/gguf_file.h"

#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/quant_blocks.h"
#include "common/status.h"

namespace tandem::model {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read little-endian
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
// an array longer than this is a corrupt file, not a vocabulary; the cap keeps
// a lying count from turning into a multi-gigabyte allocation.
constexpr uint64_t kMaxArrayElements = uint64_t{1} << 24;

// ggml_type numbers of the tensor types we can load.
absl::StatusOr<DType> dtypeFromGgml(uint32_t t) {
  switch (t) {
    case 0: return DType::kF32;
    case 1: return DType::kF16;
    case 2: return DType::kQ4_0;
    case 8: return DType::kQ8_0;
    case 12: return DType::kQ4_K;
    case 14: return DType::kQ6_K;
    case 26: return DType::kI32;
    case 30: return DType::kBF16;
    default: return absl::UnimplementedError(absl::StrCat("ggml type ", t));
  }
}

// fixed encoded size of a scalar metadata type; 0 for string/array/unknown.
size_t scalarSize(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    default: return 0;
  }
}

// this abseil predates absl::string_view == std::string_view.
absl::string_view av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool validType(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kF64); }

}  // namespace

// reads the file front to back with a bounds-checked cursor.
class GgufParser {
 public:
  explicit GgufParser(MappedFilePtr file)
      : file_(std::move(file)), data_(file_->data()), size_(file_->size()) {}

  absl::StatusOr<GgufFilePtr> parse() {
    auto gguf = std::shared_ptr<GgufFile>(new GgufFile());
    gguf->file_ = file_;
    uint32_t magic = 0;
    if (size_ < 4) return truncated("the magic");
    RETURN_IF_ERROR(readPod(&magic, "the magic"));
    if (magic != kGgufMagic) {
      return absl::InvalidArgumentError(
          absl::StrCat(path(), ": not a GGUF file (bad magic)"));
    }
    RETURN_IF_ERROR(readPod(&gguf->version_, "the version"));
    if (gguf->version_ != 2 && gguf->version_ != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          path(), ": unsupported GGUF version ", gguf->version_, " (need 2 or 3)"));
    }
    uint64_t n_tensors = 0, n_kv = 0;
    RETURN_IF_ERROR(readPod(&n_tensors, "the tensor count"));
    RETURN_IF_ERROR(readPod(&n_kv, "the metadata count"));
    // each key/value takes at least 12 bytes, each tensor info at least 24.
    if (n_kv > remaining() / 12) {
      return absl::InvalidArgumentError(
          absl::StrCat(path(), ": metadata count ", n_kv, " exceeds the file size"));
    }
    if (n_tensors > remaining() / 24) {
      return absl::InvalidArgumentError(
          absl::StrCat(path(), ": tensor count ", n_tensors, " exceeds the file size"));
    }
    for (uint64_t i = 0; i < n_kv; ++i) {
      std::string_view key;
      RETURN_IF_ERROR(readString(&key, absl::StrCat("metadata key #", i)));
      uint32_t type = 0;
      RETURN_IF_ERROR(readPod(&type, absl::StrCat("the type of ", av(key))));
      GgufValue value;
      RETURN_IF_ERROR(readValue(type, std::string(key), &value));
      if (!gguf->metadata_.emplace(std::string(key), std::move(value)).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(path(), ": duplicate metadata key ", av(key)));
      }
    }
    uint64_t alignment = kDefaultAlignment;
    if (gguf->find("general.alignment") != nullptr) {
      auto a = gguf->getInt("general.alignment");
      if (!a.ok() || *a <= 0 || (*a & (*a - 1)) != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(path(), ": general.alignment must be a power of two"));
      }
      alignment = static_cast<uint64_t>(*a);
    }
    gguf->tensors_.reserve(n_tensors);
    std::set<std::string_view> names;
    for (uint64_t i = 0; i < n_tensors; ++i) {
      GgufTensorInfo info;
      RETURN_IF_ERROR(readTensorInfo(i, alignment, &info));
      gguf->tensors_.push_back(std::move(info));
    }
    for (const auto& t : gguf->tensors_) {
      if (!names.insert(t.name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(path(), ": duplicate tensor ", t.name));
      }
    }
    // the data section starts at the next multiple of the alignment.
    uint64_t data_start = (pos_ + alignment - 1) / alignment * alignment;
    if (n_tensors > 0 && data_start > size_) return truncated("the tensor data");
    for (auto& t : gguf->tensors_) {
      uint64_t avail = size_ - std::min<uint64_t>(data_start, size_);
      if (t.offset > avail || t.bytes > avail - t.offset) {
        return absl::DataLossError(absl::StrCat(
            path(), ": tensor ", t.name, " data [", t.offset, ", +", t.bytes,
            ") runs past the end of the file (data section holds ", avail, " bytes)"));
      }
      t.offset += data_start;
      t.data = data_ + t.offset;
    }
    gguf->data_start_ = data_start;
    gguf->alignment_ = alignment;
    return GgufFilePtr(std::move(gguf));
  }

 private:
  const std::string& path() const { return file_->path(); }
  uint64_t remaining() const { return size_ - pos_; }

  absl::Status truncated(std::string_view what) const {
    return absl::DataLossError(
        absl::StrCat(path(), ": truncated GGUF file while reading ", av(what),
                     " at offset ", pos_, " (file size ", size_, ")"));
  }

  template <typename T>
  absl::Status readPod(T* out, std::string_view what) {
    if (remaining() < sizeof(T)) return truncated(what);
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return absl::OkStatus();
  }

  absl::Status readString(std::string_view* out, std::string_view what) {
    uint64_t len = 0;
    RETURN_IF_ERROR(readPod(&len, what));
    if (len > remaining()) {
      return absl::DataLossError(absl::StrCat(
          path(), ": string length ", len, " of ", av(what), " at offset ", pos_ - 8,
          " exceeds the ", remaining(), " bytes left in the file"));
    }
    *out = std::string_view(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return absl::OkStatus();
  }

  // one scalar of type `t` (not an array), widened.
  absl::Status readScalar(GgufType t, const std::string& key,
                          std::variant<int64_t, double, std::string_view>* out) {
    auto rd = [&](auto v) -> absl::Status {
      RETURN_IF_ERROR(readPod(&v, key));
      if constexpr (std::is_floating_point_v<decltype(v)>) {
        *out = static_cast<double>(v);
      } else if constexpr (std::is_same_v<decltype(v), uint64_t>) {
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return absl::InvalidArgumentError(
              absl::StrCat(path(), ": value of ", key, " does not fit int64"));
        }
        *out = static_cast<int64_t>(v);
      } else {
        *out = static_cast<int64_t>(v);
      }
      return absl::OkStatus();
    };
    switch (t) {
      case GgufType::kU8: return rd(uint8_t{});
      case GgufType::kI8: return rd(int8_t{});
      case GgufType::kU16: return rd(uint16_t{});
      case GgufType::kI16: return rd(int16_t{});
      case GgufType::kU32: return rd(uint32_t{});
      case GgufType::kI32: return rd(int32_t{});
      case GgufType::kF32: return rd(float{});
      case GgufType::kBool: {
        uint8_t b = 0;
        RETURN_IF_ERROR(readPod(&b, key));
        *out = static_cast<int64_t>(b != 0);
        return absl::OkStatus();
      }
      case GgufType::kString: {
        std::string_view s;
        RETURN_IF_ERROR(readString(&s, key));
        *out = s;
        return absl::OkStatus();
      }
      case GgufType::kU64: return rd(uint64_t{});
      case GgufType::kI64: return rd(int64_t{});
      case GgufType::kF64: return rd(double{});
      case GgufType::kArray: break;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(path(), ": nested arrays are not supported (key ", key, ")"));
  }

  absl::Status readValue(uint32_t type, const std::string& key, GgufValue* out) {
    if (!validType(type)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path(), ": metadata key ", key, " has unknown type ", type));
    }
    out->type = static_cast<GgufType>(type);
    if (out->type != GgufType::kArray) return readScalar(out->type, key, &out->scalar);
    uint32_t elem = 0;
    uint64_t count = 0;
    RETURN_IF_ERROR(readPod(&elem, key));
    RETURN_IF_ERROR(readPod(&count, key));
    if (!validType(elem) || static_cast<GgufType>(elem) == GgufType::kArray) {
      return absl::InvalidArgumentError(absl::StrCat(
          path(), ": array ", key, " has unsupported element type ", elem));
    }
    out->array_type = static_cast<GgufType>(elem);
    // strings take at least their 8-byte length each.
    size_t min_size = out->array_type == GgufType::kString ? 8 : scalarSize(out->array_type);
    if (count > remaining() / min_size) {
      return absl::DataLossError(absl::StrCat(path(), ": array ", key, " claims ", count,
                                              " elements, more than the file holds"));
    }
    if (count > kMaxArrayElements) {
      return absl::InvalidArgumentError(
          absl::StrCat(path(), ": array ", key, " has too many elements (", count, ")"));
    }
    out->array.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      RETURN_IF_ERROR(readScalar(out->array_type, key, &out->array[i]));
    }
    return absl::OkStatus();
  }

  absl::Status readTensorInfo(uint64_t index, uint64_t alignment, GgufTensorInfo* info) {
    std::string_view name;
    RETURN_IF_ERROR(readString(&name, absl::StrCat("the name of tensor #", index)));
    info->name = std::string(name);
    uint32_t n_dims = 0;
    RETURN_IF_ERROR(readPod(&n_dims, info->name));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return absl::InvalidArgumentError(absl::StrCat(
          path(), ": tensor ", info->name, " has ", n_dims, " dimensions (need 1..4)"));
    }
    std::vector<int64_t> ne(n_dims);
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t v = 0;
      RETURN_IF_ERROR(readPod(&v, info->name));
      // the cap keeps numel * element size far from overflowing uint64.
      if (v > (uint64_t{1} << 40) || (v != 0 && numel > (uint64_t{1} << 40) / v)) {
        return absl::InvalidArgumentError(absl::StrCat(
            path(), ": tensor ", info->name, " has an absurd dimension ", v));
      }
      ne[d] = static_cast<int64_t>(v);
      numel *= v;
    }
    uint32_t type = 0;
    RETURN_IF_ERROR(readPod(&type, info->name));
    RETURN_IF_ERROR(readPod(&info->offset, info->name));
    auto dtype = dtypeFromGgml(type);
    if (!dtype.ok()) {
      return absl::UnimplementedError(absl::StrCat(
          path(), ": tensor ", info->name, " has unsupported ggml type ", type,
          " (supported: F32=0, F16=1, Q4_0=2, Q8_0=8, Q4_K=12, Q6_K=14, I32=26, BF16=30)"));
    }
    info->dtype = *dtype;
    const int block = quant::blockValues(info->dtype);
    if (ne[0] % block != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path(), ": ", std::string(dtypeName(info->dtype)), " tensor ", info->name, " has a row length ",
          ne[0], " that is not a multiple of ", block));
    }
    if (info->offset % alignment != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path(), ": tensor ", info->name, " offset ", info->offset,
          " is not a multiple of the alignment ", alignment));
    }
    uint64_t rows = ne[0] == 0 ? 0 : numel / static_cast<uint64_t>(ne[0]);
    info->bytes = rows * rowBytes(info->dtype, static_cast<size_t>(ne[0]));
    info->shape.assign(ne.rbegin(), ne.rend());
    return absl::OkStatus();
  }

  MappedFilePtr file_;
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

absl::StatusOr<GgufFilePtr> GgufFile::open(const std::string& path) {
  ASSIGN_OR_RETURN(MappedFilePtr file, MappedFile::open(path));
  return GgufParser(std::move(file)).parse();
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::findTensor(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

namespace {

absl::Status notFound(const GgufFile& f, std::string_view key) {
  return absl::NotFoundError(absl::StrCat(f.path(), ": no metadata key ", av(key)));
}

absl::Status wrongType(const GgufFile& f, std::string_view key, std::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat(f.path(), ": metadata key ", av(key), " is not ", av(want)));
}

bool isInt(GgufType t) {
  return t != GgufType::kF32 && t != GgufType::kF64 && t != GgufType::kString &&
         t != GgufType::kArray;
}
bool isFloat(GgufType t) { return t == GgufType::kF32 || t == GgufType::kF64; }

}  // namespace

absl::StatusOr<std::string_view> GgufFile::getString(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return notFound(*this, key);
  if (v->type != GgufType::kString) return wrongType(*this, key, "a string");
  return std::get<std::string_view>(v->scalar);
}

absl::StatusOr<int64_t> GgufFile::getInt(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return notFound(*this, key);
  if (!isInt(v->type) || v->type == GgufType::kBool) return wrongType(*this, key, "an integer");
  return std::get<int64_t>(v->scalar);
}

absl::StatusOr<double> GgufFile::getFloat(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return notFound(*this, key);
  if (isFloat(v->type)) return std::get<double>(v->scalar);
  if (isInt(v->type) && v->type != GgufType::kBool) {
    return static_cast<double>(std::get<int64_t>(v->scalar));
  }
  return wrongType(*this, key, "a number");
}

absl::StatusOr<bool> GgufFile::getBool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return notFound(*this, key);
  if (v->type != GgufType::kBool) return wrongType(*this, key, "a bool");
  return std::get<int64_t>(v->scalar) != 0;
}

absl::StatusOr<std::vector<std::string_view>> GgufFile::getStringArray(
    std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return notFound(*this, key);
  if (v->type != GgufType::kArray || v->array_type != GgufType::kString) {
    return wrongType(*this, key, "an array of strings");
  }
  std::vector<std::string_view> out;
  out.reserve(v->array.size());
  for (const auto& e : v->array) out.push_back(std::get<std::string_view>(e));
  return out;
}

absl::StatusOr<std::vector<int64_t>> GgufFile::getIntArray(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return notFound(*this, key);
  if (v->type != GgufType::kArray || !isInt(v->array_type)) {
    return wrongType(*this, key, "an array of integers");
  }
  std::vector<int64_t> out;
  out.reserve(v->array.size());
  for (const auto& e : v->array) out.push_back(std::get<int64_t>(e));
  return out;
}

absl::StatusOr<std::vector<double>> GgufFile::getFloatArray(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return notFound(*this, key);
  if (v->type != GgufType::kArray ||
      !(isFloat(v->array_type) || (isInt(v->array_type) && v->array_type != GgufType::kBool))) {
    return wrongType(*this, key, "an array of numbers");
  }
  std::vector<double> out;
  out.reserve(v->array.size());
  for (const auto& e : v->array) {
    out.push_back(std::holds_alternative<double>(e) ? std::get<double>(e)
                                                    : static_cast<double>(std::get<int64_t>(e)));
  }
  return out;
}

}  // namespace tandem::model
