// Parity of the cpu backend's KV writes and paged attention with the
// reference backend: mixed batches of prefill chunks (from position 0 and
// continuing a cached prefix) and decodes, scattered block tables, blocks
// of 5 and 16 slots, GQA 8:4, 4:1 and 3:3, F32 and F16 caches.
//
// Tolerance 1e-5 of max(1, |reference|): an F16 cache converts to F32
// exactly, so only summation order differs from the reference.
#include <algorithm>
#include <numeric>

#include "tests/kernels/cpu/parity_fixture.h"

namespace tandem::kernels::cpu {
namespace {

constexpr int kLayers = 2;
constexpr int kHeadDim = 20;

struct SeqSpec {
  int start;
  int len;
};

struct AttentionCase {
  int num_heads;
  int num_kv_heads;
  int block_size;
  DType kv_dtype;
};

class CpuAttentionTest : public ParityTest {
 protected:
  void runCase(const AttentionCase& c);
};

void CpuAttentionTest::runCase(const AttentionCase& c) {
  Backend& cpu = *cpu_;
  Backend& ref = ref_;
  const std::vector<SeqSpec> seqs = {{0, 21}, {13, 9}, {40, 1}, {0, 1}, {31, 2}};
  kvcache::KvLayout layout{kLayers, c.num_kv_heads, kHeadDim, c.block_size, c.kv_dtype};
  const int64_t kv_width = static_cast<int64_t>(c.num_kv_heads) * kHeadDim;

  // block tables: distinct block ids in a shuffled order
  int blocks_needed = 0;
  for (const SeqSpec& s : seqs) blocks_needed += (s.start + s.len + c.block_size - 1) / c.block_size;
  const int num_blocks = blocks_needed + 3;
  std::vector<int32_t> ids(num_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng_);

  std::vector<int32_t> tables, seq_info, slots_prefix, slots_new, positions;
  int next_id = 0, q_rows = 0, max_q = 0, max_ctx = 0;
  for (const SeqSpec& s : seqs) {
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

  const size_t cache_floats = layout.blockBytes() * num_blocks / sizeof(float);
  const Tensor cache_cpu = zeros(DType::kF32, 1, static_cast<int64_t>(cache_floats));
  const Tensor cache_ref = zeros(DType::kF32, 1, static_cast<int64_t>(cache_floats));
  const KvCacheView view_cpu{cache_cpu.data, layout, num_blocks};
  const KvCacheView view_ref{cache_ref.data, layout, num_blocks};

  for (int layer = 0; layer < kLayers; ++layer) {
    // the cached prefix, identical in both caches
    const int64_t n_prefix = static_cast<int64_t>(slots_prefix.size());
    const Tensor kp = random(DType::kF32, n_prefix, kv_width, 2.0f);
    const Tensor vp = random(DType::kF32, n_prefix, kv_width);
    ref.writeKv(kp, vp, ints(slots_prefix), view_cpu, layer);
    ref.writeKv(kp, vp, ints(slots_prefix), view_ref, layer);
    // this step's tokens, written by each backend
    const Tensor kn = random(DType::kF32, q_rows, kv_width, 2.0f);
    const Tensor vn = random(DType::kF32, q_rows, kv_width);
    cpu.writeKv(kn, vn, ints(slots_new), view_cpu, layer);
    ref.writeKv(kn, vn, ints(slots_new), view_ref, layer);
  }
  ASSERT_EQ(std::memcmp(cache_cpu.data, cache_ref.data, layout.blockBytes() * num_blocks), 0)
      << "writeKv differs";

  AttentionBatch batch;
  batch.seq_info = ints(seq_info).reshaped(static_cast<int64_t>(seqs.size()), 4);
  batch.block_tables = ints(tables).reshaped(1, static_cast<int64_t>(tables.size()));
  batch.num_seqs = static_cast<int>(seqs.size());
  batch.max_q_len = max_q;
  batch.max_context = max_ctx;
  batch.num_heads = c.num_heads;
  batch.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const Tensor q = random(DType::kF32, q_rows, static_cast<int64_t>(c.num_heads) * kHeadDim, 2.0f);
  const Tensor got = zeros(DType::kF32, q.rows, q.cols), want = zeros(DType::kF32, q.rows, q.cols);
  cpu.pagedAttention(q, view_cpu, 1, batch, got);
  ref.pagedAttention(q, view_ref, 1, batch, want);
  ParityTest::expectNear(got, want, 1e-5f);
}

TEST_P(CpuAttentionTest, MatchesReferenceOnMixedBatches) {
  const AttentionCase cases[] = {
      {8, 4, 16, DType::kF32}, {8, 4, 5, DType::kF32}, {4, 1, 16, DType::kF32},
      {4, 1, 5, DType::kF16},  {3, 3, 5, DType::kF32}, {8, 4, 16, DType::kF16},
      {8, 4, 5, DType::kBF16},
  };
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE(testing::Message() << c.num_heads << ":" << c.num_kv_heads << " block "
                                    << c.block_size << " " << dtypeName(c.kv_dtype));
    runCase(c);
  }
}

TEST_P(CpuAttentionTest, FirstTokenAttendsOnlyToItself) {
  kvcache::KvLayout layout{1, 1, 4, 16, DType::kF32};
  const Tensor cache = zeros(DType::kF32, 1, static_cast<int64_t>(layout.blockBytes() / 4));
  const KvCacheView view{cache.data, layout, 1};
  const Tensor k = random(DType::kF32, 1, 4), v = random(DType::kF32, 1, 4);
  cpu_->writeKv(k, v, ints({0}), view, 0);
  AttentionBatch batch;
  batch.seq_info = ints({0, 1, 0, 0}).reshaped(1, 4);
  batch.block_tables = ints({0}).reshaped(1, 1);
  batch.num_seqs = 1;
  batch.max_q_len = batch.max_context = 1;
  batch.num_heads = 2;
  batch.scale = 0.5f;
  const Tensor q = random(DType::kF32, 1, 8, 5.0f), out = zeros(DType::kF32, 1, 8);
  cpu_->pagedAttention(q, view, 0, batch, out);
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(out.as<float>()[h * 4 + j], v.as<float>()[j]);
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, CpuAttentionTest, ::testing::ValuesIn(availableParams()), paramName);

}  // namespace
}  // namespace tandem::kernels::cpu
