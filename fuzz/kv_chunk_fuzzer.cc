// The chunks a prefill worker pushes into a decode worker's KV storage, as
// the gRPC KV receiver takes them: each message split into gRPC slices,
// decoded by server/kv_transport/grpc_kv_chunk.h (fields parsed, data left
// in the slices), then checked and stored by KvPushSink against an expected
// transfer of 3 blocks of 64 bytes (block size, piece bounds and order,
// block index and hash, checksum), until a `last` chunk or an error.
// Input: messages as frames (fuzz/frames.h); a frame's first byte picks
// where its message is cut into slices.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz/frames.h"
#include "grpc/grpc.h"
#include "grpcpp/support/byte_buffer.h"
#include "server/kv_transport/grpc_kv_chunk.h"
#include "server/kv_transport/kv_push_sink.h"
#include "server/kv_transport/transfer_table.h"

namespace kt = tandem::kv_transport;

namespace {
constexpr size_t kBlockBytes = 64;
constexpr int kBlocks = 4;
alignas(64) char g_storage[kBlockBytes * kBlocks];

// the message as gRPC may hand it over: up to 4 slices.
grpc::ByteBuffer toByteBuffer(std::string_view frame) {
  uint8_t cuts = frame.empty() ? 0 : static_cast<uint8_t>(frame[0]);
  std::string_view msg = frame.empty() ? frame : frame.substr(1);
  std::vector<grpc::Slice> slices;
  size_t pos = 0;
  for (int i = 0; i < 3 && pos < msg.size(); ++i) {
    size_t len = (cuts >> (2 * i) & 3) * (msg.size() / 4 + 1) / 2;
    len = std::min(len, msg.size() - pos);
    slices.emplace_back(msg.data() + pos, len);
    pos += len;
  }
  slices.emplace_back(msg.data() + pos, msg.size() - pos);
  return grpc::ByteBuffer(slices.data(), slices.size());
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  grpc_init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto table = std::make_shared<kt::TransferTable>(kt::KvStorage{g_storage, kBlockBytes, kBlocks});
  kt::ExpectedTransfer expected;
  expected.transfer_id = "t";
  expected.dst_block_ids = {2, 0, 3};
  expected.hashes = {11, 22, 33};
  if (!table->expect(expected, [](const kt::TransferResult&) {}).ok()) __builtin_trap();
  kt::KvPushSink sink(table, [](const absl::Status&) {});
  for (std::string_view frame : tandem::fuzz::splitFrames(data, size)) {
    tandem::v1::KvChunk meta;
    kt::KvChunkData bytes;
    absl::Status s = kt::decodeKvChunk(toByteBuffer(frame), &meta, &bytes);
    if (s.ok()) s = sink.store(meta, bytes);
    if (!s.ok()) {
      if (sink.active()) sink.active()->fail(s);
      break;
    }
    if (meta.last()) {
      (void)sink.active()->finish();
      break;
    }
  }
  return 0;
}
