// Parity of the hip KV-cache writes, paged attention (flash prefill and
// split-K decode) and block copies, run on the host emulator, with the
// reference backend: mixed batches of prefill chunks (from position 0 and
// continuing a cached prefix) and decodes, decode-only batches over long
// contexts (several split-K partitions), scattered block tables, blocks of
// 5 and 16 slots, GQA 8:4, 4:1, 3:3, 16:1 and 17:1 (over the decode kernel's
// group limit: the prefill kernel takes it), head dims 20 and 128, F32, F16
// and BF16 caches.
//
// Tolerance 2e-5 of max(1, |reference|): cached values convert to F32
// exactly, so only summation order (F32 on the device) differs. KV writes
// and block copies are compared byte for byte.
#include <numeric>

#include "tests/kernels/hip/hip_parity_fixture.h"

namespace tandem::kernels::hip {
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
  std::vector<SeqSpec> seqs;
};

const std::vector<SeqSpec> kMixed = {{0, 21}, {13, 9}, {40, 1}, {0, 1}, {31, 2}, {0, 17}};
const std::vector<SeqSpec> kDecode = {{700, 1}, {0, 1}, {255, 1}, {256, 1}, {37, 1}};

class HipAttentionTest : public HipParityTest {
 protected:
  void runCase(const AttentionCase& c);
};

void HipAttentionTest::runCase(const AttentionCase& c) {
  kvcache::KvLayout layout{kLayers, c.num_kv_heads, c.head_dim, c.block_size, c.kv_dtype};
  const int64_t kv_width = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  int blocks_needed = 0;
  for (const SeqSpec& s : c.seqs)
    blocks_needed += (s.start + s.len + c.block_size - 1) / c.block_size;
  const int num_blocks = blocks_needed + 3;
  std::vector<int32_t> ids(num_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng_);

  std::vector<int32_t> tables, seq_info, slots_prefix, slots_new;
  int next_id = 0, q_rows = 0, max_q = 0, max_ctx = 0;
  for (const SeqSpec& s : c.seqs) {
    const int offset = static_cast<int>(tables.size());
    const int n_blocks = (s.start + s.len + c.block_size - 1) / c.block_size;
    for (int b = 0; b < n_blocks; ++b) tables.push_back(ids[next_id++]);
    for (int p = 0; p < s.start + s.len; ++p) {
      const int slot = tables[offset + p / c.block_size] * c.block_size + p % c.block_size;
      (p < s.start ? slots_prefix : slots_new).push_back(slot);
    }
    seq_info.insert(seq_info.end(), {q_rows, s.len, s.start, offset});
    q_rows += s.len;
    max_q = std::max(max_q, s.len);
    max_ctx = std::max(max_ctx, s.start + s.len);
  }

  const size_t cache_bytes = layout.blockBytes() * num_blocks;
  const Tensor cache_ref = zeros(DType::kI32, 1, static_cast<int64_t>(cache_bytes / 4));
  const KvCacheView view_ref{cache_ref.data, layout, num_blocks};
  const Tensor cache_dev = toDevice(cache_ref);
  const KvCacheView view_dev{cache_dev.data, layout, num_blocks};
  const Tensor d_slots_prefix = toDevice(ints(slots_prefix)),
               d_slots_new = toDevice(ints(slots_new));
  for (int layer = 0; layer < kLayers; ++layer) {
    const Tensor kp =
        random(DType::kF32, static_cast<int64_t>(slots_prefix.size()), kv_width, 2.0f);
    const Tensor vp = random(DType::kF32, static_cast<int64_t>(slots_prefix.size()), kv_width);
    const Tensor kn = random(DType::kF32, q_rows, kv_width, 2.0f);
    const Tensor vn = random(DType::kF32, q_rows, kv_width);
    ref_.writeKv(kp, vp, ints(slots_prefix), view_ref, layer);
    ref_.writeKv(kn, vn, ints(slots_new), view_ref, layer);
    hip_->writeKv(toDevice(kp), toDevice(vp), d_slots_prefix, view_dev, layer);
    hip_->writeKv(toDevice(kn), toDevice(vn), d_slots_new, view_dev, layer);
  }
  const Tensor cache_back = toHost(cache_dev);
  ASSERT_EQ(std::memcmp(cache_back.data, cache_ref.data, cache_bytes), 0) << "writeKv differs";

  AttentionBatch batch;
  batch.num_seqs = static_cast<int>(c.seqs.size());
  batch.max_q_len = max_q;
  batch.max_context = max_ctx;
  batch.num_heads = c.num_heads;
  batch.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const Tensor q =
      random(DType::kF32, q_rows, static_cast<int64_t>(c.num_heads) * c.head_dim, 2.0f);
  const Tensor want = zeros(DType::kF32, q.rows, q.cols);
  batch.seq_info = ints(seq_info).reshaped(batch.num_seqs, 4);
  batch.block_tables = ints(tables).reshaped(1, static_cast<int64_t>(tables.size()));
  ref_.pagedAttention(q, view_ref, 1, batch, want);
  batch.seq_info = toDevice(batch.seq_info);
  batch.block_tables = toDevice(batch.block_tables);
  const Tensor got = toDevice(zeros(DType::kF32, q.rows, q.cols));
  hip_->pagedAttention(toDevice(q), view_dev, 1, batch, got);
  expectNear(toHost(got), want, 2e-5f);
}

std::string caseName(const AttentionCase& c) {
  return std::to_string(c.num_heads) + ":" + std::to_string(c.num_kv_heads) + " d" +
         std::to_string(c.head_dim) + " block " + std::to_string(c.block_size) + " " +
         std::string(dtypeName(c.kv_dtype));
}

TEST_P(HipAttentionTest, PrefillMatchesReferenceOnMixedBatches) {
  const AttentionCase cases[] = {
      {8, 4, 20, 16, DType::kF32, kMixed},  {8, 4, 20, 5, DType::kF32, kMixed},
      {4, 1, 20, 16, DType::kF16, kMixed},  {3, 3, 20, 5, DType::kBF16, kMixed},
      {2, 1, 128, 16, DType::kF32, kMixed},
  };
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE(caseName(c));
    runCase(c);
  }
}

TEST_P(HipAttentionTest, SplitKDecodeMatchesReferenceOverLongContexts) {
  const AttentionCase cases[] = {
      {8, 4, 20, 16, DType::kF32, kDecode},  {4, 1, 20, 5, DType::kF16, kDecode},
      {16, 1, 8, 16, DType::kBF16, kDecode}, {17, 1, 8, 16, DType::kF32, kDecode},
      {2, 2, 128, 16, DType::kF32, kDecode},
  };
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE(caseName(c));
    runCase(c);
  }
}

TEST_P(HipAttentionTest, CopyGatherAndScatterMoveWholeBlocks) {
  kvcache::KvLayout layout{kLayers, 2, 6, 5, DType::kF16};  // 240-byte blocks: 16-byte words
  const int n = 7;
  const Tensor src = random(DType::kF16, n, static_cast<int64_t>(layout.blockBytes() / 2));
  const Tensor dst_init = random(DType::kF16, n, static_cast<int64_t>(layout.blockBytes() / 2));
  const std::vector<int32_t> from = {0, 6, 3}, to = {5, 1, 3};
  const Tensor want = zeros(DType::kF16, dst_init.rows, dst_init.cols);
  std::memcpy(want.data, dst_init.data, dst_init.bytes());
  ref_.copyBlocks({src.data, layout, n}, from, {want.data, layout, n}, to);
  const Tensor d_src = toDevice(src), d_dst = toDevice(dst_init);
  hip_->copyBlocks({d_src.data, layout, n}, from, {d_dst.data, layout, n}, to);
  EXPECT_EQ(std::memcmp(toHost(d_dst).data, want.data, want.bytes()), 0);

  // through a staging area and back, as a spill to host and a reload do
  auto staging = hip_->allocatePinnedHost(3 * layout.blockBytes());
  ASSERT_TRUE(staging.ok());
  hip_->gatherBlocks({d_src.data, layout, n}, from, (*staging)->data());
  const Tensor d_back = toDevice(zeros(DType::kF16, src.rows, src.cols));
  hip_->scatterBlocks((*staging)->data(), from, {d_back.data, layout, n});
  const Tensor back = toHost(d_back);
  for (int32_t b : from) {
    EXPECT_EQ(
        std::memcmp(static_cast<char*>(back.data) + b * layout.blockBytes(),
                    static_cast<char*>(src.data) + b * layout.blockBytes(), layout.blockBytes()),
        0)
        << "block " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Emu, HipAttentionTest, ::testing::Values(64, 32), waveName);

}  // namespace
}  // namespace tandem::kernels::hip
