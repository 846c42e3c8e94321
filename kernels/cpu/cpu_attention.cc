// CpuBackend's KV cache ops: storing new keys and values into their slots,
// and paged attention over them.
#include <algorithm>
#include <vector>

#include "common/status.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/kernel_templates.h"

namespace tandem::kernels::cpu {

namespace {

// queries of one prefill chunk per attention task: enough to amortise the
// task, few enough that long chunks still spread over every thread.
constexpr int kQueriesPerTask = 16;

// attention tasks a thread gets at least (where there are enough kv heads
// to split the sequences' tiles into): enough to even out their lengths.
constexpr int kTasksPerThread = 4;

}  // namespace

void CpuBackend::writeKv(const Tensor& k, const Tensor& v, const Tensor& slots,
                         const KvCacheView& cache, int layer) {
  const kvcache::KvLayout& l = cache.layout;
  const int64_t width = static_cast<int64_t>(l.num_kv_heads) * l.head_dim;
  TANDEM_CHECK(k.dtype == DType::kF32 && v.dtype == DType::kF32 && slots.dtype == DType::kI32);
  TANDEM_CHECK(k.cols == width && v.cols == width && k.rows == v.rows && slots.rows == k.rows);
  TANDEM_CHECK(layer >= 0 && layer < l.num_layers);
  for (int64_t t = 0; t < k.rows; ++t) {
    const int32_t slot = slots.as<int32_t>()[t];
    const int block = slot / l.block_size;
    TANDEM_CHECK(slot >= 0 && block < cache.num_blocks);
    char* base = static_cast<char*>(cache.data) + static_cast<size_t>(block) * l.blockBytes();
    const size_t offset = static_cast<size_t>(slot % l.block_size) * width * l.elemBytes();
    kernels_.fromF32(k.as<float>() + t * width, l.dtype, base + l.sliceOffset(layer, 0) + offset, width);
    kernels_.fromF32(v.as<float>() + t * width, l.dtype, base + l.sliceOffset(layer, 1) + offset, width);
  }
}

void CpuBackend::pagedAttention(const Tensor& q, const KvCacheView& cache, int layer,
                                const AttentionBatch& batch, const Tensor& out) {
  const kvcache::KvLayout& l = cache.layout;
  TANDEM_CHECK(l.num_kv_heads > 0 && batch.num_heads % l.num_kv_heads == 0);
  TANDEM_CHECK(q.cols == static_cast<int64_t>(batch.num_heads) * l.head_dim);
  TANDEM_CHECK(out.rows == q.rows && out.cols == q.cols && out.data != q.data);
  TANDEM_CHECK(l.head_dim <= impl::kMaxHeadDim && l.block_size <= impl::kMaxBlockSize);
  TANDEM_CHECK(layer >= 0 && layer < l.num_layers);
  const int group = batch.num_heads / l.num_kv_heads;

  // one AttendArgs per (sequence, query tile, kv head); a task runs a
  // range of a tile's kv heads, split no finer than it takes to give every
  // thread kTasksPerThread tasks (a layer of a 16-sequence decode on 2
  // threads: 16 tasks of 12 heads, not 192 of one).
  std::vector<AttendArgs> args;
  struct Task {
    int begin, end;  // args[begin, end)
    int keys;        // keys its last query sees
  };
  std::vector<Task> tasks;
  int tiles = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int q_len = batch.seq_info.as<int32_t>()[s * AttentionBatch::kSeqInfoCols + 1];
    tiles += (std::max(q_len, 0) + kQueriesPerTask - 1) / kQueriesPerTask;
  }
  const int want = kTasksPerThread * static_cast<int>(pool_.size());
  const int splits = std::clamp(tiles > 0 ? (want + tiles - 1) / tiles : 1, 1, l.num_kv_heads);
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int32_t* info = batch.seq_info.as<int32_t>() + s * AttentionBatch::kSeqInfoCols;
    const int q_row = info[0], q_len = info[1], start = info[2], table_offset = info[3];
    TANDEM_CHECK(q_row >= 0 && q_len >= 0 && q_row + q_len <= q.rows && start >= 0);
    const int32_t* table = batch.block_tables.as<int32_t>() + table_offset;
    const int last_block = (start + q_len - 1) / l.block_size;
    for (int b = 0; q_len > 0 && b <= last_block; ++b) {
      TANDEM_CHECK(table[b] >= 0 && table[b] < cache.num_blocks);
    }
    for (int i0 = 0; i0 < q_len; i0 += kQueriesPerTask) {
      const int q_end = std::min(q_len, i0 + kQueriesPerTask);
      for (int part = 0; part < splits; ++part) {
        const int h0 = l.num_kv_heads * part / splits, h1 = l.num_kv_heads * (part + 1) / splits;
        const int first = static_cast<int>(args.size());
        if (h0 < h1) tasks.push_back({first, first + h1 - h0, start + q_end});
        for (int kvh = h0; kvh < h1; ++kvh) {
          AttendArgs a;
          a.q = q.as<float>() + static_cast<int64_t>(q_row) * q.cols;
          a.out = out.as<float>() + static_cast<int64_t>(q_row) * out.cols;
          a.row_stride = q.cols;
          a.first_head = kvh * group;
          a.group = group;
          a.head_dim = l.head_dim;
          a.q_begin = i0;
          a.q_end = q_end;
          a.start_pos = start;
          a.table = table;
          a.cache = static_cast<const char*>(cache.data);
          a.block_bytes = l.blockBytes();
          a.k_offset = l.sliceOffset(layer, 0);
          a.v_offset = l.sliceOffset(layer, 1);
          a.block_size = l.block_size;
          a.kv_row = static_cast<int64_t>(l.num_kv_heads) * l.head_dim;
          a.kv_head = kvh;
          a.kv_dtype = l.dtype;
          a.scale = batch.scale;
          args.push_back(a);
        }
      }
    }
  }
  // later tiles of a chunk see more keys; hand them out first so the long
  // tasks do not end up last on one thread.
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& x, const Task& y) { return x.keys > y.keys; });
  const auto run = [&](const Task& t) {
    for (int i = t.begin; i < t.end; ++i) kernels_.attend(args[i]);
  };
  if (tasks.size() == 1 || pool_.size() == 1) {
    for (const Task& t : tasks) run(t);
    return;
  }
  pool_.parallelFor(static_cast<int>(tasks.size()), [&](int task, int) { run(tasks[task]); });
}

}  // namespace tandem::kernels::cpu
