#include "server/kv_transport/ucx_protocol.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/kv_transport/shm_protocol.h"
#include "server/kv_transport/transfer_table.h"

namespace tandem::kv_transport::ucx {

namespace {

using shm::Reader;
using shm::Writer;

// reads a length-prefixed string of at most `max` bytes.
bool boundedBytes(Reader& r, std::string* out, size_t max) { return r.bytes(out) && out->size() <= max; }

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string hexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::optional<std::string> hexDecode(std::string_view hex, size_t max_bytes) {
  if (hex.size() % 2 != 0 || hex.size() / 2 > max_bytes) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = hexValue(hex[2 * i]), lo = hexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi << 4 | lo);
  }
  return out;
}

bool rangeInside(uint64_t offset, uint64_t block_bytes, uint64_t bytes) {
  return offset <= bytes && block_bytes <= bytes - offset;
}

std::string formatUcxEndpoint(const UcxEndpoint& e) {
  std::string out = absl::StrCat("ucx://", hexEncode(e.worker_address), "?");
  if (!e.rkey.empty()) {
    absl::StrAppend(&out, "rkey=", hexEncode(e.rkey), "&base=", absl::Hex(e.base), "&bytes=",
                    e.bytes, "&");
  }
  absl::StrAppend(&out, "boot_id=", e.boot_id, "&pid=", e.pid);
  return out;
}

std::string tokenParam(std::string_view token) { return absl::StrCat("&token=", hexEncode(token)); }

absl::StatusOr<UcxEndpoint> parseUcxEndpoint(std::string_view rest) {
  auto bad = [](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad ucx:// KV endpoint: ", absl::string_view(why.data(), why.size())));
  };
  UcxEndpoint e;
  const size_t q = rest.find('?');
  auto address = hexDecode(rest.substr(0, q), kMaxWorkerAddressBytes);
  if (!address || address->empty()) return bad("worker address");
  e.worker_address = *std::move(address);
  bool have_rkey = false, have_base = false, have_bytes = false, have_boot = false, have_token = false,
       have_pid = false;
  if (q != std::string_view::npos) {
    const std::string_view params = rest.substr(q + 1);
    for (absl::string_view param :
         absl::StrSplit(absl::string_view(params.data(), params.size()), '&', absl::SkipEmpty())) {
      const size_t eq = param.find('=');
      if (eq == absl::string_view::npos) return bad("parameter without a value");
      const absl::string_view key = param.substr(0, eq);
      const std::string_view value(param.data() + eq + 1, param.size() - eq - 1);
      auto once = [&](bool& seen) {
        const bool first = !seen;
        seen = true;
        return first;
      };
      if (key == "rkey") {
        auto rkey = hexDecode(value, kMaxRkeyBytes);
        if (!once(have_rkey) || !rkey || rkey->empty()) return bad("rkey");
        e.rkey = *std::move(rkey);
      } else if (key == "base") {
        if (!once(have_base) || !absl::SimpleHexAtoi(absl::string_view(value.data(), value.size()), &e.base)) {
          return bad("base");
        }
      } else if (key == "bytes") {
        if (!once(have_bytes) || !absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &e.bytes)) {
          return bad("bytes");
        }
      } else if (key == "boot_id") {
        if (!once(have_boot) || value.size() > kMaxBootIdBytes) return bad("boot_id");
        e.boot_id = std::string(value);
      } else if (key == "pid") {
        if (!once(have_pid) || !absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &e.pid)) {
          return bad("pid");
        }
      } else if (key == "token") {
        auto token = hexDecode(value, kTransferTokenBytes);
        if (!once(have_token) || !token || token->size() != kTransferTokenBytes) return bad("token");
        e.token = *std::move(token);
      } else {
        return bad(absl::StrCat("unknown parameter '", key.substr(0, 64), "'"));
      }
    }
  }
  if (have_rkey != have_base || have_rkey != have_bytes) return bad("rkey needs base and bytes");
  // D's storage must fit its address space: base + bytes does not wrap.
  if (have_rkey && e.bytes > UINT64_MAX - e.base) return bad("storage wraps the address space");
  return e;
}

std::string encode(const OpenMessage& m) {
  Writer w;
  w.u64(m.stream).u64(m.block_bytes).bytes(m.transfer_id).bytes(m.token).bytes(m.worker_address);
  w.bytes(m.boot_id).u32(m.pid);
  return w.str();
}

std::optional<OpenMessage> decodeOpen(std::string_view payload) {
  Reader r(payload);
  OpenMessage m;
  if (!r.u64(&m.stream) || !r.u64(&m.block_bytes) ||
      !boundedBytes(r, &m.transfer_id, kMaxTransferIdBytes) ||
      !boundedBytes(r, &m.token, kTransferTokenBytes) ||
      !boundedBytes(r, &m.worker_address, kMaxWorkerAddressBytes) ||
      !boundedBytes(r, &m.boot_id, kMaxBootIdBytes) || !r.u32(&m.pid) || r.left() != 0 ||
      m.worker_address.empty()) {
    return std::nullopt;
  }
  return m;
}

std::string encode(const OpenedMessage& m) {
  Writer w;
  w.u64(m.stream).i32(m.code).bytes(m.message).u64(m.handle);
  w.u32(static_cast<uint32_t>(m.offsets.size()));
  for (uint64_t o : m.offsets) w.u64(o);
  return w.str();
}

std::optional<OpenedMessage> decodeOpened(std::string_view payload, size_t max_blocks) {
  Reader r(payload);
  OpenedMessage m;
  uint32_t n = 0;
  if (!r.u64(&m.stream) || !r.i32(&m.code) || !boundedBytes(r, &m.message, kMaxMessageBytes) ||
      !r.u64(&m.handle) || !r.u32(&n) || n > max_blocks || r.left() != size_t{n} * 8) {
    return std::nullopt;
  }
  m.offsets.resize(n);
  for (uint64_t& o : m.offsets) r.u64(&o);
  return m;
}

std::string encode(const BlocksMessage& m) {
  Writer w;
  w.u64(m.handle);
  for (const BlockNote& b : m.blocks) w.i32(b.index).u64(b.hash).u64(b.checksum);
  return w.str();
}

std::optional<BlocksMessage> decodeBlocks(std::string_view payload) {
  Reader r(payload);
  BlocksMessage m;
  if (!r.u64(&m.handle) || r.left() % 20 != 0) return std::nullopt;
  m.blocks.resize(r.left() / 20);
  for (BlockNote& b : m.blocks) {
    r.i32(&b.index);
    r.u64(&b.hash);
    r.u64(&b.checksum);
  }
  return m;
}

std::string encode(const DataHeader& m) {
  Writer w;
  w.u64(m.handle).i32(m.block.index).u64(m.block.hash).u64(m.block.checksum);
  return w.str();
}

std::optional<DataHeader> decodeDataHeader(std::string_view header) {
  Reader r(header);
  DataHeader m;
  if (!r.u64(&m.handle) || !r.i32(&m.block.index) || !r.u64(&m.block.hash) ||
      !r.u64(&m.block.checksum) || r.left() != 0) {
    return std::nullopt;
  }
  return m;
}

std::string encode(const FinishMessage& m) {
  Writer w;
  w.u64(m.handle).bytes(m.token);
  return w.str();
}

std::optional<FinishMessage> decodeFinish(std::string_view payload) {
  Reader r(payload);
  FinishMessage m;
  if (!r.u64(&m.handle) || !boundedBytes(r, &m.token, kTransferTokenBytes) || r.left() != 0) {
    return std::nullopt;
  }
  return m;
}

std::string encodeAbort(uint64_t handle) {
  Writer w;
  w.u64(handle);
  return w.str();
}

std::optional<uint64_t> decodeAbort(std::string_view payload) {
  Reader r(payload);
  uint64_t handle = 0;
  if (!r.u64(&handle) || r.left() != 0) return std::nullopt;
  return handle;
}

std::string encode(const ResultMessage& m) {
  Writer w;
  w.u64(m.stream).i32(m.code).i32(m.failed_block).bytes(m.message);
  return w.str();
}

std::optional<ResultMessage> decodeResult(std::string_view payload) {
  Reader r(payload);
  ResultMessage m;
  if (!r.u64(&m.stream) || !r.i32(&m.code) || !r.i32(&m.failed_block) ||
      !boundedBytes(r, &m.message, kMaxMessageBytes) || r.left() != 0) {
    return std::nullopt;
  }
  return m;
}

}  // namespace tandem::kv_transport::ucx
