// The zero-copy KvChunk codec: what it encodes protobuf parses as the same
// KvChunk, and it decodes what protobuf encodes, data split over any slices.
#include "server/kv_transport/grpc_kv_chunk.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::kv_transport {
namespace {

v1::KvChunk sampleMeta() {
  v1::KvChunk meta;
  meta.set_transfer_id("t-1");
  meta.set_block_bytes(1000);
  v1::KvPiece* p = meta.add_pieces();
  p->set_index(3);
  p->set_block_hash(0xfeedbeefcafe1234ULL);
  p->set_offset(0);
  p->set_length(11);
  p->set_checksum(77);
  meta.set_last(true);
  return meta;
}

std::string flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

std::string drain(KvChunkData& data) {
  std::string out;
  data.consume(data.left(), [&](const char* p, size_t n) { out.append(p, n); });
  return out;
}

TEST(GrpcKvChunkTest, EncodesWhatProtobufParsesAsTheSameChunk) {
  static const char kA[] = "hello ", kB[] = "world";
  std::vector<grpc::Slice> data = {grpc::Slice(kA, 6, grpc::Slice::STATIC_SLICE),
                                   grpc::Slice(kB, 5, grpc::Slice::STATIC_SLICE)};
  v1::KvChunk parsed;
  ASSERT_TRUE(parsed.ParseFromString(flatten(encodeKvChunk(sampleMeta(), data))));
  v1::KvChunk expected = sampleMeta();
  expected.set_data("hello world");
  EXPECT_EQ(parsed.SerializeAsString(), expected.SerializeAsString());
}

TEST(GrpcKvChunkTest, DecodesProtobufEncodingSplitAcrossSlices) {
  v1::KvChunk chunk = sampleMeta();
  chunk.set_data("hello world");
  const std::string wire = chunk.SerializeAsString();
  // every split point, so fields and the data straddle slice boundaries.
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    grpc::Slice parts[2] = {grpc::Slice(wire.data(), cut),
                            grpc::Slice(wire.data() + cut, wire.size() - cut)};
    grpc::ByteBuffer buffer(parts, 2);
    v1::KvChunk meta;
    KvChunkData data;
    ASSERT_TRUE(decodeKvChunk(buffer, &meta, &data).ok()) << cut;
    EXPECT_EQ(meta.SerializeAsString(), sampleMeta().SerializeAsString()) << cut;
    EXPECT_EQ(data.left(), 11u);
    EXPECT_EQ(drain(data), "hello world") << cut;
  }
}

TEST(GrpcKvChunkTest, ChunkWithoutDataHasNoBytes) {
  v1::KvChunk meta;
  meta.set_last(true);
  grpc::ByteBuffer buffer = encodeKvChunk(meta, {});
  v1::KvChunk decoded;
  KvChunkData data;
  ASSERT_TRUE(decodeKvChunk(buffer, &decoded, &data).ok());
  EXPECT_TRUE(decoded.last());
  EXPECT_EQ(data.left(), 0u);
}

TEST(GrpcKvChunkTest, RefusesTruncatedAndDoubledData) {
  v1::KvChunk chunk = sampleMeta();
  chunk.set_data("hello world");
  const std::string wire = chunk.SerializeAsString();
  grpc::Slice truncated(wire.data(), wire.size() - 1);
  v1::KvChunk meta;
  KvChunkData data;
  EXPECT_EQ(decodeKvChunk(grpc::ByteBuffer(&truncated, 1), &meta, &data).code(),
            absl::StatusCode::kInvalidArgument);
  grpc::Slice doubled(wire + "\x22\x01x");
  EXPECT_EQ(decodeKvChunk(grpc::ByteBuffer(&doubled, 1), &meta, &data).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tandem::kv_transport
