// Parity of every backend's KV-cache writes, paged attention and block
// copies with the reference backend, one test per (backend, case): mixed
// batches of prefill chunks (from position 0 and continuing a cached
// prefix) and decodes, decode-only batches over long contexts (several of
// the hip split-K partitions), scattered block tables, blocks of 5 and 16
// slots, GQA 8:4, 4:1, 3:3, 16:1 and 17:1 (over the hip decode kernel's
// group limit: its prefill kernel takes it), head dims 8, 20 and 128, F32,
// F16 and BF16 caches.
//
// Attention is held to the backend's tolerance (cached values convert to
// F32 exactly, so only summation order differs); KV writes and block
// copies are compared byte for byte.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels {
namespace {

constexpr int kLayers = 2;

struct SeqSpec {
  int start;
  int len;
};

struct AttentionCase {
  int num_heads;
  int num_kv_heads;
  int head_dim;
  int block_size;
  DType kv_dtype;
  std::string batch_name;
  std::vector<SeqSpec> seqs;
  std::string name() const {
    return std::to_string(num_heads) + "to" + std::to_string(num_kv_heads) + "_d" +
           std::to_string(head_dim) + "_block" + std::to_string(block_size) + "_" +
           std::string(dtypeName(kv_dtype)) + "_" + batch_name;
  }
};

std::vector<AttentionCase> attentionCases() {
  const std::vector<SeqSpec> mixed5 = {{0, 21}, {13, 9}, {40, 1}, {0, 1}, {31, 2}};
  const std::vector<SeqSpec> mixed6 = {{0, 21}, {13, 9}, {40, 1}, {0, 1}, {31, 2}, {0, 17}};
  const std::vector<SeqSpec> decode = {{700, 1}, {0, 1}, {255, 1}, {256, 1}, {37, 1}};
  // a 16-sequence decode step (192 single-query tasks on the threaded cpu
  // backend)
  std::vector<SeqSpec> decode16;
  for (int s = 0; s < 16; ++s) decode16.push_back({(s * 23) % 70, 1});
  const std::vector<SeqSpec> long_chunks = {{0, 100}, {40, 70}, {130, 1}};
  return {
      {8, 4, 20, 16, DType::kF32, "mixed5", mixed5},
      {8, 4, 20, 5, DType::kF32, "mixed5", mixed5},
      {4, 1, 20, 16, DType::kF32, "mixed5", mixed5},
      {4, 1, 20, 5, DType::kF16, "mixed5", mixed5},
      {3, 3, 20, 5, DType::kF32, "mixed5", mixed5},
      {8, 4, 20, 16, DType::kF16, "mixed5", mixed5},
      {8, 4, 20, 5, DType::kBF16, "mixed5", mixed5},
      {8, 4, 20, 16, DType::kF32, "mixed6", mixed6},
      {8, 4, 20, 5, DType::kF32, "mixed6", mixed6},
      {4, 1, 20, 16, DType::kF16, "mixed6", mixed6},
      {3, 3, 20, 5, DType::kBF16, "mixed6", mixed6},
      {2, 1, 128, 16, DType::kF32, "mixed6", mixed6},
      {8, 4, 20, 16, DType::kF32, "decode", decode},
      {4, 1, 20, 5, DType::kF16, "decode", decode},
      {16, 1, 8, 16, DType::kBF16, "decode", decode},
      {17, 1, 8, 16, DType::kF32, "decode", decode},
      {2, 2, 128, 16, DType::kF32, "decode", decode},
      {12, 12, 16, 16, DType::kF32, "decode16", decode16},
      // the flash-decoding kernel's shapes (head_dim 64, 128): GQA groups of
      // 4, 8 (two scoring passes) and 16 (two value passes), F16/BF16
      // caches, contexts over one 512-position partition
      {8, 2, 64, 16, DType::kF16, "decode", decode},
      {16, 2, 128, 16, DType::kBF16, "decode", decode},
      {16, 1, 64, 5, DType::kF32, "decode", decode},
      {8, 8, 128, 16, DType::kF16, "decode16", decode16},
      // the matrix cores' prefill (head_dim a multiple of 16, F16/BF16):
      // chunks after prefixes, several 64-row query tiles and 32-key tiles
      {8, 2, 64, 16, DType::kF16, "mixed6", mixed6},
      {4, 1, 128, 16, DType::kBF16, "mixed5", mixed5},
      {6, 3, 32, 5, DType::kF16, "long", long_chunks},
      {4, 2, 16, 16, DType::kBF16, "long", long_chunks},
  };
}

// a batch's block tables (distinct block ids in a shuffled order) and the
// cache slots of its cached prefixes and of its new tokens.
struct BatchLayout {
  int num_blocks = 0;
  std::vector<int32_t> tables, seq_info, slots_prefix, slots_new;
  int q_rows = 0, max_q = 0, max_ctx = 0;
};

BatchLayout layOut(const AttentionCase& c, std::mt19937& rng) {
  BatchLayout b;
  int blocks_needed = 0;
  for (const SeqSpec& s : c.seqs)
    blocks_needed += (s.start + s.len + c.block_size - 1) / c.block_size;
  b.num_blocks = blocks_needed + 3;
  std::vector<int32_t> ids(b.num_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  int next_id = 0;
  for (const SeqSpec& s : c.seqs) {
    const int offset = static_cast<int>(b.tables.size());
    const int n_blocks = (s.start + s.len + c.block_size - 1) / c.block_size;
    for (int i = 0; i < n_blocks; ++i) b.tables.push_back(ids[next_id++]);
    for (int p = 0; p < s.start + s.len; ++p) {
      const int slot = b.tables[offset + p / c.block_size] * c.block_size + p % c.block_size;
      (p < s.start ? b.slots_prefix : b.slots_new).push_back(slot);
    }
    b.seq_info.insert(b.seq_info.end(), {b.q_rows, s.len, s.start, offset});
    b.q_rows += s.len;
    b.max_q = std::max(b.max_q, s.len);
    b.max_ctx = std::max(b.max_ctx, s.start + s.len);
  }
  return b;
}

using AttentionParityTest = BackendParityTest<AttentionCase>;

TEST_P(AttentionParityTest, WritesKvAndAttendsLikeTheReference) {
  const AttentionCase& c = testCase();
  const kvcache::KvLayout layout{kLayers, c.num_kv_heads, c.head_dim, c.block_size, c.kv_dtype};
  const int64_t kv_width = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  const BatchLayout b = layOut(c, rng());

  const size_t cache_bytes = layout.blockBytes() * b.num_blocks;
  const Tensor cache_ref = zeros(DType::kI32, 1, static_cast<int64_t>(cache_bytes / 4));
  const KvCacheView view_ref{cache_ref.data, layout, b.num_blocks};
  const Tensor cache_dev = toDevice(cache_ref);
  const KvCacheView view_dev{cache_dev.data, layout, b.num_blocks};
  const Tensor d_slots_prefix = toDevice(ints(b.slots_prefix));
  const Tensor d_slots_new = toDevice(ints(b.slots_new));
  const int64_t n_prefix = static_cast<int64_t>(b.slots_prefix.size());
  for (int layer = 0; layer < kLayers; ++layer) {
    // the cached prefix and this step's tokens
    const Tensor kp = random(DType::kF32, n_prefix, kv_width, 2.0f);
    const Tensor vp = random(DType::kF32, n_prefix, kv_width);
    const Tensor kn = random(DType::kF32, b.q_rows, kv_width, 2.0f);
    const Tensor vn = random(DType::kF32, b.q_rows, kv_width);
    ref_.writeKv(kp, vp, ints(b.slots_prefix), view_ref, layer);
    ref_.writeKv(kn, vn, ints(b.slots_new), view_ref, layer);
    backend().writeKv(toDevice(kp), toDevice(vp), d_slots_prefix, view_dev, layer);
    backend().writeKv(toDevice(kn), toDevice(vn), d_slots_new, view_dev, layer);
  }
  const Tensor cache_back = toHost(cache_dev);
  ASSERT_EQ(std::memcmp(cache_back.data, cache_ref.data, cache_bytes), 0) << "writeKv differs";

  AttentionBatch batch;
  batch.num_seqs = static_cast<int>(c.seqs.size());
  batch.max_q_len = b.max_q;
  batch.max_context = b.max_ctx;
  batch.num_heads = c.num_heads;
  batch.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const Tensor q =
      random(DType::kF32, b.q_rows, static_cast<int64_t>(c.num_heads) * c.head_dim, 2.0f);
  const Tensor want = zeros(DType::kF32, q.rows, q.cols);
  batch.seq_info = ints(b.seq_info).reshaped(batch.num_seqs, 4);
  batch.block_tables = ints(b.tables).reshaped(1, static_cast<int64_t>(b.tables.size()));
  // the matrix cores' prefill: 16-bit operands, and the reference alike
  const bool sixteen = c.kv_dtype == DType::kF16 || c.kv_dtype == DType::kBF16;
  const bool rounded = entry().rounds_attention_operands && sixteen && c.head_dim % 16 == 0 &&
                       b.max_q > 1;
  if (rounded) ref_.roundAttentionOperandsTo(c.kv_dtype);
  ref_.pagedAttention(q, view_ref, 1, batch, want);
  batch.seq_info = toDevice(batch.seq_info);
  batch.block_tables = toDevice(batch.block_tables);
  const Tensor got = toDevice(zeros(DType::kF32, q.rows, q.cols));
  backend().pagedAttention(toDevice(q), view_dev, 1, batch, got);
  const float tolerance = !rounded ? tol().attention
                          : c.kv_dtype == DType::kF16 ? tol().attention_f16
                                                      : tol().attention_bf16;
  expectNear(toHost(got), want, tolerance);
}

TANDEM_PARITY_CASES(Attention, AttentionParityTest, attentionCases());
INSTANTIATE_TEST_SUITE_P(AttentionOwnKernels, AttentionParityTest,
                         ::testing::Combine(::testing::ValuesIn(hipOwnKernelsOnEmulatorBackends()),
                                            ::testing::ValuesIn(attentionCases())),
                         parityName<AttentionCase>);

// --- block copies ---

struct BlockCopyCase {
  kvcache::KvLayout layout;
  int num_blocks;
  std::vector<int32_t> from, to;
  std::string name() const {
    return std::string(dtypeName(layout.dtype)) + "_" + std::to_string(layout.blockBytes()) +
           "byteblocks";
  }
};

std::vector<BlockCopyCase> blockCopyCases() {
  return {
      {{2, 3, 5, 4, DType::kF32}, 6, {5, 0, 2}, {1, 4, 3}},
      {{kLayers, 2, 6, 5, DType::kF16}, 7, {0, 6, 3}, {5, 1, 3}},  // 240 bytes: 16-byte words
  };
}

using BlockCopyParityTest = BackendParityTest<BlockCopyCase>;

TEST_P(BlockCopyParityTest, CopyGatherAndScatterMoveWholeBlocks) {
  const BlockCopyCase& c = testCase();
  const kvcache::KvLayout& layout = c.layout;
  const size_t block = layout.blockBytes();
  const int64_t block_elems = static_cast<int64_t>(block / dtypeSize(layout.dtype));
  const int n = c.num_blocks;
  const Tensor src = random(layout.dtype, n, block_elems);
  const Tensor dst_init = random(layout.dtype, n, block_elems);
  const Tensor want = copyOf(dst_init);
  ref_.copyBlocks({src.data, layout, n}, c.from, {want.data, layout, n}, c.to);
  const Tensor d_src = toDevice(src), d_dst = toDevice(dst_init);
  backend().copyBlocks({d_src.data, layout, n}, c.from, {d_dst.data, layout, n}, c.to);
  EXPECT_EQ(std::memcmp(toHost(d_dst).data, want.data, want.bytes()), 0);

  // through a staging area and back, as a spill to host and a reload do
  auto staging = entry().allocateStaging(backend(), c.from.size() * block);
  ASSERT_TRUE(staging.ok()) << staging.status();
  backend().gatherBlocks({d_src.data, layout, n}, c.from, (*staging)->data());
  finish();
  const char* staged = static_cast<const char*>((*staging)->data());
  const char* src_bytes = static_cast<const char*>(src.data);
  for (size_t i = 0; i < c.from.size(); ++i) {
    EXPECT_EQ(std::memcmp(staged + i * block, src_bytes + c.from[i] * block, block), 0)
        << "staged block " << i;
  }
  const Tensor d_back = toDevice(zeros(layout.dtype, n, block_elems));
  backend().scatterBlocks((*staging)->data(), c.to, {d_back.data, layout, n});
  const Tensor back = toHost(d_back);
  for (size_t i = 0; i < c.to.size(); ++i) {
    EXPECT_EQ(std::memcmp(static_cast<char*>(back.data) + c.to[i] * block,
                          src_bytes + c.from[i] * block, block),
              0)
        << "block " << c.to[i];
  }
}

TANDEM_PARITY_CASES(BlockCopy, BlockCopyParityTest, blockCopyCases());

// --- properties every backend has ---

using AttentionPropertyTest = BackendTest;

TEST_P(AttentionPropertyTest, FirstTokenAttendsOnlyToItself) {
  kvcache::KvLayout layout{1, 1, 4, 16, DType::kF32};
  const Tensor cache =
      toDevice(zeros(DType::kF32, 1, static_cast<int64_t>(layout.blockBytes() / 4)));
  const KvCacheView view{cache.data, layout, 1};
  const Tensor k = random(DType::kF32, 1, 4), v = random(DType::kF32, 1, 4);
  backend().writeKv(toDevice(k), toDevice(v), toDevice(ints({0})), view, 0);
  AttentionBatch batch;
  batch.seq_info = toDevice(ints({0, 1, 0, 0}).reshaped(1, 4));
  batch.block_tables = toDevice(ints({0}).reshaped(1, 1));
  batch.num_seqs = 1;
  batch.max_q_len = batch.max_context = 1;
  batch.num_heads = 2;
  batch.scale = 0.5f;
  const Tensor out = toDevice(zeros(DType::kF32, 1, 8));
  backend().pagedAttention(toDevice(random(DType::kF32, 1, 8, 5.0f)), view, 0, batch, out);
  const Tensor got = toHost(out);
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(got.as<float>()[h * 4 + j], v.as<float>()[j]);
  }
}

TANDEM_ON_EVERY_BACKEND(Parity, AttentionPropertyTest);

}  // namespace
}  // namespace tandem::kernels
