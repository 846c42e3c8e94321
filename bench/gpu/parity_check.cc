#include "bench/gpu/parity_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "bench/gpu/check_tensors.h"
#include "common/quant_blocks.h"
#include "kernels/hip/gemv_rows.h"
#include "kernels/reference/operand_rounding.h"
#include "kernels/reference/reference_backend.h"

namespace tandem::bench::gpu {
namespace {

using kernels::AttentionBatch;
using kernels::KvCacheView;
using kernels::RopeParams;
using kernels::RopeStyle;
using kernels::Tensor;

// tests/kernels/backends_under_test.cc's hip tolerances
constexpr double kNormTol = 1e-5, kMatmulTol = 1e-4, kRopeTol = 1e-5, kSiluTol = 1e-6,
                 kAttentionTol = 2e-5;
constexpr DType kWeightDtypes[] = {DType::kF32, DType::kF16, DType::kBF16};

std::string dt(DType d) { return std::string(dtypeName(d)); }
std::string dims(int64_t a, int64_t b, int64_t c) {
  return std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(c);
}

class Parity {
 public:
  Parity(kernels::hip::HipBackend& backend) : backend_(backend), t_(&backend) {}

  // runs one case: `body` issues the ops and returns (got, want) host
  // tensors, or sets `error`.
  template <typename Body>
  void run(const std::string& name, double tol, Body body) {
    ParityResult r{name, 0, tol, ""};
    auto [got, want] = body(r.error);
    if (absl::Status s = backend_.checkedSynchronize(); !s.ok()) r.error = s.ToString();
    if (r.error.empty()) r.max_rel_error = maxRelativeError(got, want);
    results_.push_back(r);
  }

  Tensor dev(const Tensor& host) {
    auto d = t_.toDevice(host);
    if (!d.ok()) {
      alloc_error_ = d.status().ToString();
      return Tensor{};
    }
    return *d;
  }

  void embedding() {
    for (DType d : kWeightDtypes) {
      run("embedding_" + dt(d) + "_50x37", 0, [&](std::string&) {
        const Tensor table = t_.random(d, 50, 37);
        const Tensor ids = t_.ints({3, 0, 49, 3, 17});
        const Tensor want = t_.zeros(DType::kF32, 5, 37);
        ref_.embedding(table, ids, want);
        const Tensor out = dev(t_.zeros(DType::kF32, 5, 37));
        backend_.embedding(dev(table), dev(ids), out);
        return std::pair{t_.toHost(out), want};
      });
    }
  }

  void rmsNorm(int64_t dim) {
    for (DType d : kWeightDtypes) {
      run("rmsnorm_" + dt(d) + "_5x" + std::to_string(dim), kNormTol, [&](std::string&) {
        const Tensor x = t_.random(DType::kF32, 5, dim, 3.0f);
        const Tensor w = t_.random(d, 1, dim);
        const Tensor want = t_.zeros(DType::kF32, 5, dim);
        ref_.rmsNorm(x, w, 1e-5f, want);
        const Tensor out = dev(t_.zeros(DType::kF32, 5, dim));
        backend_.rmsNorm(dev(x), dev(w), 1e-5f, out);
        return std::pair{t_.toHost(out), want};
      });
    }
  }

  // the prefill rows' path rounds operands to 16 bits (gpu_blas.h)
  bool roundsGemmOperands() const { return !backend_.gemmPath().starts_with("tandem"); }

  void matmul(int64_t m, int64_t n, int64_t k) {
    for (DType d : kWeightDtypes) {
      for (bool bias : {false, true}) {
        run("matmul_" + dt(d) + "_" + dims(m, n, k) + (bias ? "_bias" : ""), kMatmulTol,
            [&](std::string&) {
              const Tensor x = t_.random(DType::kF32, m, k);
              const Tensor w = t_.random(d, n, k, 0.5f);
              const Tensor b = t_.random(DType::kF32, 1, n);
              const Tensor want = t_.zeros(DType::kF32, m, n);
              const Tensor xr = t_.copyOf(x);
              if (m > kernels::hip::kGemvMaxRows && d != DType::kF32 && roundsGemmOperands()) {
                kernels::roundTo16Bit(xr.as<float>(), xr.numel(), d);
              }
              ref_.matmul(xr, w, bias ? &b : nullptr, want);
              const Tensor y = dev(t_.zeros(DType::kF32, m, n));
              const Tensor db = dev(b);
              backend_.matmul(dev(x), dev(w), bias ? &db : nullptr, y);
              return std::pair{t_.toHost(y), want};
            });
      }
    }
  }

  // block-quantized weights, compared with the reference on the operands
  // each path sees (kernels/reference/operand_rounding.h)
  void quantMatmul(DType d, int64_t m, int64_t n, int64_t k) {
    run("matmul_" + dt(d) + "_" + dims(m, n, k), kMatmulTol, [&](std::string& error) {
      const std::vector<char> blocks = kernels::randomQuantBlocks(d, n, k, t_.rng());
      const Tensor w = Tensor::of(const_cast<char*>(blocks.data()), d, n, k);
      const Tensor w_f32 = t_.zeros(DType::kF32, n, k);
      for (int64_t r = 0; r < n; ++r) {
        quant::dequantizeRow(d, blocks.data() + r * w.rowBytes(), w_f32.as<float>() + r * k, k);
      }
      const Tensor x = t_.random(DType::kF32, m, k);
      const Tensor xr = t_.copyOf(x);
      if (m <= kernels::hip::kGemvMaxRows) {
        kernels::roundTripActQ8(xr.as<float>(), xr.numel(), quant::activationGroup(d));
      } else if (roundsGemmOperands()) {
        kernels::roundTo16Bit(xr.as<float>(), xr.numel(), DType::kF16);
        kernels::roundTo16Bit(w_f32.as<float>(), w_f32.numel(), DType::kF16);
      }
      const Tensor want = t_.zeros(DType::kF32, m, n);
      ref_.matmul(xr, w_f32, nullptr, want);
      auto imported = backend_.importHost(blocks.data(), blocks.size());
      if (!imported.ok()) {
        error = imported.status().ToString();
        return std::pair{want, want};
      }
      const Tensor y = dev(t_.zeros(DType::kF32, m, n));
      backend_.matmul(dev(x), Tensor::of(**imported, d, n, k), nullptr, y);
      const Tensor got = t_.toHost(y);
      return std::pair{got, want};
    });
  }

  void rope(int head_dim) {
    for (RopeStyle style : {RopeStyle::kHalf, RopeStyle::kInterleaved}) {
      for (bool llama3 : {false, true}) {
        RopeParams p;
        p.style = style;
        p.head_dim = head_dim;
        p.theta = llama3 ? 500000.0f : 10000.0f;
        p.llama3_scaling = llama3;
        p.factor = llama3 ? 8.0f : 1.0f;
        const std::string name = std::string("rope_") +
                                 (style == RopeStyle::kHalf ? "half" : "interleaved") + "_d" +
                                 std::to_string(head_dim) + (llama3 ? "_llama3" : "_plain");
        run(name, kRopeTol, [&](std::string&) {
          const std::vector<int32_t> positions = {0, 1, 7, 300, 4095, 8191};
          const Tensor x = t_.random(DType::kF32, 6, 3 * head_dim);
          const Tensor pos = t_.ints(positions);
          const Tensor want = t_.copyOf(x);
          ref_.rope(want, pos, p);
          const Tensor dx = dev(x);
          backend_.rope(dx, dev(pos), p);
          return std::pair{t_.toHost(dx), want};
        });
      }
    }
  }

  void elementwise(int64_t cols) {
    const std::string shape = "_3x" + std::to_string(cols);
    run("silu_mul" + shape, kSiluTol, [&](std::string&) {
      const Tensor g = t_.random(DType::kF32, 3, cols, 4.0f);
      const Tensor u = t_.random(DType::kF32, 3, cols, 4.0f);
      const Tensor want = t_.zeros(DType::kF32, 3, cols);
      ref_.siluMul(g, u, want);
      const Tensor out = dev(t_.zeros(DType::kF32, 3, cols));
      backend_.siluMul(dev(g), dev(u), out);
      return std::pair{t_.toHost(out), want};
    });
    run("add" + shape, 0, [&](std::string&) {
      const Tensor a = t_.random(DType::kF32, 3, cols);
      const Tensor b = t_.random(DType::kF32, 3, cols);
      const Tensor want = t_.zeros(DType::kF32, 3, cols);
      ref_.add(a, b, want);
      const Tensor out = dev(t_.zeros(DType::kF32, 3, cols));
      backend_.add(dev(a), dev(b), out);
      return std::pair{t_.toHost(out), want};
    });
    run("gather_rows" + shape, 0, [&](std::string&) {
      const Tensor x = t_.random(DType::kF32, 7, cols);
      const Tensor rows = t_.ints({6, 0, 3});
      const Tensor want = t_.zeros(DType::kF32, 3, cols);
      ref_.gatherRows(x, rows, want);
      const Tensor out = dev(t_.zeros(DType::kF32, 3, cols));
      backend_.gatherRows(dev(x), dev(rows), out);
      return std::pair{t_.toHost(out), want};
    });
  }

  // writes a cached prefix and this step's tokens of every sequence
  // (start, len) into a paged cache whose blocks are shuffled, then attends;
  // the cache must equal the reference's bit for bit.
  void attention(int heads, int kv_heads, int head_dim, int block, DType kv_dtype,
                 const std::string& batch_name, const std::vector<std::pair<int, int>>& seqs) {
    const std::string name = "attention_" + std::to_string(heads) + "to" +
                             std::to_string(kv_heads) + "_d" + std::to_string(head_dim) +
                             "_block" + std::to_string(block) + "_" + dt(kv_dtype) + "_" +
                             batch_name;
    // the matrix cores' prefill (attention_prefill_mma.h): 16-bit operands,
    // the reference rounding alike, tests/kernels/backends_under_test.cc's
    // tolerances
    const bool sixteen = kv_dtype == DType::kF16 || kv_dtype == DType::kBF16;
    int longest = 0;
    for (auto [start, len] : seqs) longest = std::max(longest, len);
    const bool rounded = sixteen && head_dim % 16 == 0 && longest > 1;
    const double tol = !rounded ? kAttentionTol : kv_dtype == DType::kF16 ? 2e-3 : 1.6e-2;
    run(name, tol, [&](std::string& error) {
      constexpr int kLayers = 2;
      const kvcache::KvLayout layout{kLayers, kv_heads, head_dim, block, kv_dtype};
      const int64_t kv_width = static_cast<int64_t>(kv_heads) * head_dim;
      int num_blocks = 3;
      for (auto [start, len] : seqs) num_blocks += (start + len + block - 1) / block;
      std::vector<int32_t> ids(num_blocks);
      std::iota(ids.begin(), ids.end(), 0);
      std::shuffle(ids.begin(), ids.end(), t_.rng());
      std::vector<int32_t> tables, seq_info, slots_prefix, slots_new;
      int q_rows = 0, max_q = 0, max_ctx = 0, next = 0;
      for (auto [start, len] : seqs) {
        const int offset = static_cast<int>(tables.size());
        for (int i = 0; i < (start + len + block - 1) / block; ++i) tables.push_back(ids[next++]);
        for (int p = 0; p < start + len; ++p) {
          const int slot = tables[offset + p / block] * block + p % block;
          (p < start ? slots_prefix : slots_new).push_back(slot);
        }
        seq_info.insert(seq_info.end(), {q_rows, len, start, offset});
        q_rows += len;
        max_q = std::max(max_q, len);
        max_ctx = std::max(max_ctx, start + len);
      }
      const size_t cache_bytes = layout.blockBytes() * num_blocks;
      const Tensor cache_ref = t_.zeros(DType::kI32, 1, static_cast<int64_t>(cache_bytes / 4));
      const KvCacheView view_ref{cache_ref.data, layout, num_blocks};
      const Tensor cache_dev = dev(cache_ref);
      const KvCacheView view_dev{cache_dev.data, layout, num_blocks};
      const Tensor d_prefix = dev(t_.ints(slots_prefix));
      const Tensor d_new = dev(t_.ints(slots_new));
      const int64_t n_prefix = static_cast<int64_t>(slots_prefix.size());
      for (int layer = 0; layer < kLayers; ++layer) {
        const Tensor kp = t_.random(DType::kF32, n_prefix, kv_width, 2.0f);
        const Tensor vp = t_.random(DType::kF32, n_prefix, kv_width);
        const Tensor kn = t_.random(DType::kF32, q_rows, kv_width, 2.0f);
        const Tensor vn = t_.random(DType::kF32, q_rows, kv_width);
        ref_.writeKv(kp, vp, t_.ints(slots_prefix), view_ref, layer);
        ref_.writeKv(kn, vn, t_.ints(slots_new), view_ref, layer);
        if (n_prefix > 0) backend_.writeKv(dev(kp), dev(vp), d_prefix, view_dev, layer);
        backend_.writeKv(dev(kn), dev(vn), d_new, view_dev, layer);
      }
      const Tensor cache_back = t_.toHost(cache_dev);
      if (std::memcmp(cache_back.data, cache_ref.data, cache_bytes) != 0) {
        error = "writeKv differs from the reference";
      }
      AttentionBatch batch;
      batch.num_seqs = static_cast<int>(seqs.size());
      batch.max_q_len = max_q;
      batch.max_context = max_ctx;
      batch.num_heads = heads;
      batch.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
      const Tensor q = t_.random(DType::kF32, q_rows, static_cast<int64_t>(heads) * head_dim, 2.0f);
      const Tensor want = t_.zeros(DType::kF32, q.rows, q.cols);
      batch.seq_info = t_.ints(seq_info).reshaped(batch.num_seqs, 4);
      batch.block_tables = t_.ints(tables).reshaped(1, static_cast<int64_t>(tables.size()));
      ref_.roundAttentionOperandsTo(rounded ? kv_dtype : DType::kF32);
      ref_.pagedAttention(q, view_ref, 1, batch, want);
      ref_.roundAttentionOperandsTo(DType::kF32);
      batch.seq_info = dev(batch.seq_info);
      batch.block_tables = dev(batch.block_tables);
      const Tensor got = dev(t_.zeros(DType::kF32, q.rows, q.cols));
      backend_.pagedAttention(dev(q), view_dev, 1, batch, got);
      return std::pair{t_.toHost(got), want};
    });
  }

  std::vector<ParityResult> results() {
    if (!alloc_error_.empty()) results_.push_back({"device_allocation", 0, 0, alloc_error_});
    return results_;
  }

 private:
  kernels::hip::HipBackend& backend_;
  kernels::ReferenceBackend ref_;
  CheckTensors t_;
  std::vector<ParityResult> results_;
  std::string alloc_error_;
};

}  // namespace

std::vector<ParityResult> runParity(kernels::hip::HipBackend& backend, bool large) {
  Parity p(backend);
  p.embedding();
  p.rmsNorm(67);
  p.rmsNorm(1000);
  for (int64_t m : {1, 3, 8, 9, 70}) p.matmul(m, 65, 130);
  for (int64_t m : {1, 4, 8, 9, 70}) p.matmul(m, 64, 256);  // the 16-byte gemv
  for (DType d : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    for (int64_t m : {1, 3, 8, 40}) p.quantMatmul(d, m, 67, 512);
  }
  p.rope(20);
  p.rope(128);
  p.elementwise(130);
  const std::vector<std::pair<int, int>> mixed = {{0, 21}, {13, 9}, {40, 1}, {0, 1}, {31, 2}};
  const std::vector<std::pair<int, int>> decode = {{700, 1}, {0, 1}, {255, 1}, {256, 1}, {37, 1}};
  for (DType d : kWeightDtypes) {
    p.attention(8, 4, 20, 16, d, "mixed5", mixed);
    p.attention(4, 1, 20, 5, d, "decode", decode);
  }
  p.attention(2, 2, 128, 16, DType::kF16, "decode", decode);
  p.attention(8, 2, 64, 16, DType::kBF16, "decode", decode);
  p.attention(8, 2, 64, 16, DType::kF16, "mixed5", mixed);
  p.attention(4, 1, 128, 16, DType::kBF16, "long", {{0, 100}, {40, 70}, {130, 1}});
  if (large) {
    p.rmsNorm(4096);
    p.matmul(1, 4096, 4096);
    p.matmul(8, 1024, 4096);
    p.matmul(130, 1024, 4096);
    p.quantMatmul(DType::kQ4_K, 8, 4096, 4096);
    p.quantMatmul(DType::kQ6_K, 1, 1024, 4096);
    p.quantMatmul(DType::kQ8_0, 130, 1024, 4096);
    p.attention(32, 8, 128, 16, DType::kBF16, "decode4k", {{4095, 1}, {1000, 1}, {0, 1}});
    p.attention(32, 8, 128, 16, DType::kF16, "decode32k", {{32767, 1}, {7000, 1}, {0, 1}});
    p.attention(32, 8, 128, 16, DType::kF16, "prefill", {{0, 300}, {512, 77}});
    p.attention(32, 8, 128, 16, DType::kBF16, "prefill2k", {{0, 2048}});
  }
  return p.results();
}

}  // namespace tandem::bench::gpu
