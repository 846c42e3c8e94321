#include "kernels/reference/reference_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/quant_blocks.h"
#include "common/status.h"
#include "kernels/host_buffer.h"
#include "kernels/moe_routing.h"
#include "kernels/rope_frequencies.h"

namespace tandem::kernels {

float loadElement(const void* data, DType dtype, size_t i) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(data)[i];
    case DType::kF16: return f16ToF32(static_cast<const uint16_t*>(data)[i]);
    case DType::kBF16: return bf16ToF32(static_cast<const uint16_t*>(data)[i]);
    default: TANDEM_CHECK(false && "unsupported dtype");
  }
  return 0.0f;
}

void storeElement(void* data, DType dtype, size_t i, float v) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(data)[i] = v; return;
    case DType::kF16: static_cast<uint16_t*>(data)[i] = f32ToF16(v); return;
    case DType::kBF16: static_cast<uint16_t*>(data)[i] = f32ToBf16(v); return;
    default: TANDEM_CHECK(false && "unsupported dtype");
  }
}

absl::StatusOr<BufferPtr> ReferenceBackend::allocate(size_t bytes) {
  return HostBuffer::allocate(bytes);
}

absl::StatusOr<BufferPtr> ReferenceBackend::importHost(const void* host, size_t bytes) {
  return HostBuffer::alias(host, bytes);
}

void ReferenceBackend::upload(void* device_dst, const void* host_src, size_t bytes) {
  std::memcpy(device_dst, host_src, bytes);
}

void ReferenceBackend::download(void* host_dst, const void* device_src, size_t bytes) {
  std::memcpy(host_dst, device_src, bytes);
}

void ReferenceBackend::embedding(const Tensor& table, const Tensor& ids, const Tensor& out) {
  TANDEM_CHECK(out.rows == ids.rows && out.cols == table.cols);
  for (int64_t i = 0; i < ids.rows; ++i) {
    const int32_t id = ids.as<int32_t>()[i];
    TANDEM_CHECK(id >= 0 && id < table.rows);
    for (int64_t j = 0; j < table.cols; ++j) {
      out.as<float>()[i * out.cols + j] = loadElement(table.data, table.dtype, id * table.cols + j);
    }
  }
}

void ReferenceBackend::rmsNorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  TANDEM_CHECK(x.cols == weight.numel() && out.rows == x.rows && out.cols == x.cols);
  for (int64_t i = 0; i < x.rows; ++i) {
    const float* xr = x.as<float>() + i * x.cols;
    double ss = 0.0;
    for (int64_t j = 0; j < x.cols; ++j) ss += static_cast<double>(xr[j]) * xr[j];
    const double inv = 1.0 / std::sqrt(ss / x.cols + eps);
    for (int64_t j = 0; j < x.cols; ++j) {
      out.as<float>()[i * x.cols + j] =
          static_cast<float>(xr[j] * inv) * loadElement(weight.data, weight.dtype, j);
    }
  }
}

void ReferenceBackend::matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) {
  TANDEM_CHECK(x.cols == w.cols && y.rows == x.rows && y.cols == w.rows);
  // a quantized w is read through the scalar dequantizer, a row at a time.
  std::vector<float> w_row(quant::isQuantized(w.dtype) ? w.cols : 0);
  for (int64_t n = 0; n < w.rows; ++n) {
    if (!w_row.empty()) {
      quant::dequantizeRow(w.dtype, w.as<char>() + n * w.rowBytes(), w_row.data(), w.cols);
    }
    for (int64_t m = 0; m < x.rows; ++m) {
      double acc = bias != nullptr ? bias->as<float>()[n] : 0.0;
      for (int64_t k = 0; k < x.cols; ++k) {
        acc += static_cast<double>(x.as<float>()[m * x.cols + k]) *
               (w_row.empty() ? loadElement(w.data, w.dtype, n * w.cols + k) : w_row[k]);
      }
      y.as<float>()[m * y.cols + n] = static_cast<float>(acc);
    }
  }
}

void ReferenceBackend::rope(const Tensor& x, const Tensor& positions, const RopeParams& params) {
  const int d = params.head_dim;
  TANDEM_CHECK(x.cols % d == 0 && positions.rows == x.rows);
  const std::vector<float> inv = ropeInverseFrequencies(params);
  for (int64_t t = 0; t < x.rows; ++t) {
    const float pos = static_cast<float>(positions.as<int32_t>()[t]);
    for (int64_t h = 0; h < x.cols / d; ++h) {
      float* v = x.as<float>() + t * x.cols + h * d;
      for (int i = 0; i < d / 2; ++i) {
        const float angle = pos * inv[i];
        const float c = static_cast<float>(std::cos(static_cast<double>(angle)));
        const float s = static_cast<float>(std::sin(static_cast<double>(angle)));
        const int a = params.style == RopeStyle::kHalf ? i : 2 * i;
        const int b = params.style == RopeStyle::kHalf ? i + d / 2 : 2 * i + 1;
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * c - x1 * s;
        v[b] = x1 * c + x0 * s;
      }
    }
  }
}

void ReferenceBackend::writeKv(const Tensor& k, const Tensor& v, const Tensor& slots,
                               const KvCacheView& cache, int layer) {
  const kvcache::KvLayout& l = cache.layout;
  const int64_t width = static_cast<int64_t>(l.num_kv_heads) * l.head_dim;
  TANDEM_CHECK(k.cols == width && v.cols == width && slots.rows == k.rows);
  for (int64_t t = 0; t < k.rows; ++t) {
    const int32_t slot = slots.as<int32_t>()[t];
    const int block = slot / l.block_size;
    TANDEM_CHECK(block >= 0 && block < cache.num_blocks);
    char* base = static_cast<char*>(cache.data) + static_cast<size_t>(block) * l.blockBytes();
    for (int kv = 0; kv < 2; ++kv) {
      const float* src = (kv == 0 ? k : v).as<float>() + t * width;
      void* dst = base + l.sliceOffset(layer, kv);
      for (int64_t j = 0; j < width; ++j) {
        storeElement(dst, l.dtype, (slot % l.block_size) * width + j, src[j]);
      }
    }
  }
}

void ReferenceBackend::pagedAttention(const Tensor& q, const KvCacheView& cache, int layer,
                                      const AttentionBatch& batch, const Tensor& out) {
  const kvcache::KvLayout& l = cache.layout;
  const int d = l.head_dim;
  const int group = batch.num_heads / l.num_kv_heads;
  const int64_t kv_width = static_cast<int64_t>(l.num_kv_heads) * d;
  TANDEM_CHECK(q.cols == static_cast<int64_t>(batch.num_heads) * d);
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int32_t* info = batch.seq_info.as<int32_t>() + s * AttentionBatch::kSeqInfoCols;
    const int q_row = info[0], q_len = info[1], start = info[2];
    const int32_t* table = batch.block_tables.as<int32_t>() + info[3];
    for (int i = 0; i < q_len; ++i) {
      const int n_keys = start + i + 1;  // causal: keys up to and including itself
      for (int h = 0; h < batch.num_heads; ++h) {
        const float* q_in = q.as<float>() + (q_row + i) * q.cols + h * d;
        // 16-bit operands: q * scale rounded, the scale then already in
        std::vector<float> rounded;
        const bool round = attention_operands_ != DType::kF32;
        if (round) {
          rounded.resize(d);
          for (int j = 0; j < d; ++j) {
            storeElement(&rounded[j], attention_operands_, 0, q_in[j] * batch.scale);
            rounded[j] = loadElement(&rounded[j], attention_operands_, 0);
          }
        }
        const float* qv = round ? rounded.data() : q_in;
        const double q_scale = round ? 1.0 : batch.scale;
        const int kvh = h / group;
        std::vector<double> scores(n_keys);
        double max_score = -INFINITY;
        for (int p = 0; p < n_keys; ++p) {
          const char* block = static_cast<const char*>(cache.data) +
                              static_cast<size_t>(table[p / l.block_size]) * l.blockBytes();
          const size_t base = (p % l.block_size) * kv_width + kvh * d;
          double dot = 0.0;
          for (int j = 0; j < d; ++j) {
            dot += static_cast<double>(qv[j]) *
                   loadElement(block + l.sliceOffset(layer, 0), l.dtype, base + j);
          }
          scores[p] = dot * q_scale;
          max_score = std::max(max_score, scores[p]);
        }
        double total = 0.0;
        for (double& sc : scores) total += (sc = std::exp(sc - max_score));
        if (round) {  // the probabilities themselves, rounded: a sum of 1 after
          for (double& sc : scores) {
            float pr = 0.0f;
            storeElement(&pr, attention_operands_, 0, static_cast<float>(sc / total));
            sc = loadElement(&pr, attention_operands_, 0);
          }
          total = 1.0;
        }
        float* o = out.as<float>() + (q_row + i) * out.cols + h * d;
        for (int j = 0; j < d; ++j) {
          double acc = 0.0;
          for (int p = 0; p < n_keys; ++p) {
            const char* block = static_cast<const char*>(cache.data) +
                                static_cast<size_t>(table[p / l.block_size]) * l.blockBytes();
            const size_t base = (p % l.block_size) * kv_width + kvh * d;
            acc += scores[p] * loadElement(block + l.sliceOffset(layer, 1), l.dtype, base + j);
          }
          o[j] = static_cast<float>(acc / total);
        }
      }
    }
  }
}

void ReferenceBackend::siluMul(const Tensor& gate, const Tensor& up, const Tensor& out) {
  TANDEM_CHECK(gate.numel() == up.numel() && out.numel() == gate.numel());
  for (int64_t i = 0; i < gate.numel(); ++i) {
    const double g = gate.as<float>()[i];
    out.as<float>()[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up.as<float>()[i]);
  }
}

void ReferenceBackend::add(const Tensor& a, const Tensor& b, const Tensor& out) {
  TANDEM_CHECK(a.numel() == b.numel() && out.numel() == a.numel());
  for (int64_t i = 0; i < a.numel(); ++i) out.as<float>()[i] = a.as<float>()[i] + b.as<float>()[i];
}

void ReferenceBackend::moeRoute(const Tensor& logits, bool normalize, const Tensor& ids,
                                const Tensor& weights) {
  TANDEM_CHECK(ids.rows == logits.rows && weights.rows == logits.rows && ids.cols == weights.cols);
  routeTopK(logits.as<float>(), logits.rows, static_cast<int>(logits.cols), static_cast<int>(ids.cols),
            normalize, ids.as<int32_t>(), weights.as<float>());
}

void ReferenceBackend::moeExperts(const Tensor& x, const MoeExperts& experts, const Tensor& ids,
                                  const Tensor& weights, const Tensor& out) {
  TANDEM_CHECK(out.rows == x.rows && out.cols == x.cols && ids.rows == x.rows);
  const int64_t f = experts.ffn(), h = x.cols;
  std::vector<float> gate(f), up(f), down(h);
  for (int64_t t = 0; t < x.rows; ++t) {
    float* o = out.as<float>() + t * h;
    std::fill(o, o + h, 0.0f);
    for (int64_t j = 0; j < ids.cols; ++j) {
      const int32_t e = ids.as<int32_t>()[t * ids.cols + j];
      TANDEM_CHECK(e >= 0 && e < experts.num_experts);
      const Tensor xt = x.rowRange(t, 1);
      matmul(xt, experts.gateOf(e), nullptr, Tensor::of(gate.data(), DType::kF32, 1, f));
      matmul(xt, experts.upOf(e), nullptr, Tensor::of(up.data(), DType::kF32, 1, f));
      const Tensor g = Tensor::of(gate.data(), DType::kF32, 1, f);
      siluMul(g, Tensor::of(up.data(), DType::kF32, 1, f), g);
      matmul(g, experts.downOf(e), nullptr, Tensor::of(down.data(), DType::kF32, 1, h));
      const float w = weights.as<float>()[t * ids.cols + j];
      for (int64_t i = 0; i < h; ++i) o[i] += w * down[i];
    }
  }
}

void ReferenceBackend::gatherRows(const Tensor& x, const Tensor& rows, const Tensor& out) {
  TANDEM_CHECK(out.rows == rows.rows && out.cols == x.cols);
  for (int64_t i = 0; i < rows.rows; ++i) {
    const int32_t r = rows.as<int32_t>()[i];
    TANDEM_CHECK(r >= 0 && r < x.rows);
    std::memcpy(out.as<float>() + i * out.cols, x.as<float>() + r * x.cols, x.rowBytes());
  }
}

void ReferenceBackend::copyBlocks(const KvCacheView& src, std::span<const int32_t> src_ids,
                                  const KvCacheView& dst, std::span<const int32_t> dst_ids) {
  TANDEM_CHECK(src_ids.size() == dst_ids.size());
  TANDEM_CHECK(src.layout.blockBytes() == dst.layout.blockBytes());
  const size_t bytes = src.layout.blockBytes();
  for (size_t i = 0; i < src_ids.size(); ++i) {
    TANDEM_CHECK(src_ids[i] >= 0 && src_ids[i] < src.num_blocks);
    TANDEM_CHECK(dst_ids[i] >= 0 && dst_ids[i] < dst.num_blocks);
    std::memmove(static_cast<char*>(dst.data) + dst_ids[i] * bytes,
                 static_cast<const char*>(src.data) + src_ids[i] * bytes, bytes);
  }
}

}  // namespace tandem::kernels
