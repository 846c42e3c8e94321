// The cpu backend's mixture-of-experts ops (cpu_backend.h).
//
// moeExperts: the batch's choices grouped by expert (moe_routing.h), x's
// rows gathered in that order, then two jobs on the pool: gate and up of
// every chosen expert, its rows of x together (a batch's tokens that chose
// one expert share each weight load; decode reads only the chosen experts),
// and down; between them SiLU-and-mul over all rows, after them the
// weighted sum of each token's choices in their order. A job's tasks are
// ranges of the chosen experts' weight rows, so one wait a phase, however
// many experts. Quantized weights take x quantized once a phase, as the
// integer dots of an ordinary matmul do (llama.cpp's arithmetic).
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/quant_blocks.h"
#include "common/status.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_matmul.h"
#include "kernels/host_buffer.h"
#include "kernels/moe_routing.h"

namespace tandem::kernels::cpu {

void CpuBackend::moeRoute(const Tensor& logits, bool normalize, const Tensor& ids,
                          const Tensor& weights) {
  TANDEM_CHECK(logits.dtype == DType::kF32 && ids.dtype == DType::kI32 && weights.dtype == DType::kF32);
  TANDEM_CHECK(ids.rows == logits.rows && weights.rows == logits.rows && ids.cols == weights.cols);
  routeTopK(logits.as<float>(), logits.rows, static_cast<int>(logits.cols), static_cast<int>(ids.cols),
            normalize, ids.as<int32_t>(), weights.as<float>());
}

std::byte* CpuBackend::moeScratch(size_t bytes) {
  if (moe_scratch_ == nullptr || moe_scratch_->bytes() < bytes) {
    auto buf = HostBuffer::allocate(std::max(bytes, moe_scratch_ ? 2 * moe_scratch_->bytes() : 0));
    TANDEM_CHECK(buf.ok() && "cpu backend: moe workspace");
    moe_scratch_ = std::move(*buf);
  }
  return static_cast<std::byte*>(moe_scratch_->data());
}

void CpuBackend::expertMatmuls(std::span<const MatmulArgs> args, const QuantDotTable* dots,
                               std::span<const void* const> xq) {
  int64_t rows = 0, work = 0, max_m = 0;
  for (const MatmulArgs& a : args) {
    rows += a.n;
    work += a.m * a.n * a.k;
    max_m = std::max(max_m, a.m);
  }
  const auto run = [&](size_t i, int64_t begin, int64_t end) {
    if (dots != nullptr) {
      quantMatmulRowsQuantized(args[i], *dots, xq[i], begin, end);
    } else {
      kernels_.matmul(args[i], begin, end);
    }
  };
  if (pool_.size() == 1 || work < (1 << 16)) {
    for (size_t i = 0; i < args.size(); ++i) run(i, 0, args[i].n);
    return;
  }
  // ranges of about 1/(8 threads) of all the rows, on the dense gemm's
  // 32-row packing edges when a range serves more than 4 rows of x
  const int64_t align = max_m <= 4 ? 4 : 32;
  const int64_t wanted = int64_t{pool_.size()} * 8;
  int64_t chunk = std::max<int64_t>(16, (rows + wanted - 1) / wanted);
  chunk = (chunk + align - 1) / align * align;
  struct Piece {
    size_t arg;
    int64_t begin, end;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i < args.size(); ++i) {
    for (int64_t b = 0; b < args[i].n; b += chunk) pieces.push_back({i, b, std::min(args[i].n, b + chunk)});
  }
  pool_.parallelFor(static_cast<int>(pieces.size()),
                    [&](int t, int) { run(pieces[t].arg, pieces[t].begin, pieces[t].end); });
}

void CpuBackend::moeExperts(const Tensor& x, const MoeExperts& experts, const Tensor& ids,
                            const Tensor& weights, const Tensor& out) {
  TANDEM_CHECK(x.dtype == DType::kF32 && out.dtype == DType::kF32 && ids.dtype == DType::kI32);
  TANDEM_CHECK(out.rows == x.rows && out.cols == x.cols && ids.rows == x.rows);
  TANDEM_CHECK(weights.rows == ids.rows && weights.cols == ids.cols && x.data != out.data);
  TANDEM_CHECK(experts.gate.cols == x.cols && experts.down.cols == experts.ffn());
  const int64_t t_rows = x.rows, h = x.cols, f = experts.ffn(), k = ids.cols, n = t_rows * k;
  if (t_rows == 0) return;
  const ExpertGroups g = groupByExpert(ids.as<int32_t>(), t_rows, static_cast<int>(k), experts.num_experts);
  const DType wt = experts.gate.dtype;
  const bool quantized = quant::isQuantized(wt);
  // workspace: gathered x [n, h] | gate [n, f] | up [n, f] | down [n, h] | quantized rows
  const size_t floats = static_cast<size_t>(n * (2 * h + 2 * f));
  const size_t q_bytes = quantized ? std::max(quantizedActivationBytes(wt, n, h),
                                              quantizedActivationBytes(experts.down.dtype, n, f))
                                   : 0;
  std::byte* ws = moeScratch(floats * sizeof(float) + q_bytes + 64);
  float* xg = reinterpret_cast<float*>(ws);
  float* gate = xg + n * h;
  float* up = gate + n * f;
  float* down = up + n * f;
  void* xq = reinterpret_cast<std::byte*>(down + n * h) + (64 - (floats * sizeof(float)) % 64) % 64;
  for (int64_t p = 0; p < n; ++p) {
    std::memcpy(xg + p * h, x.as<float>() + (g.order[p] / k) * h, h * sizeof(float));
  }
  // the dots of one row of x where every chosen expert has one (batch-1 decode)
  const QuantDotTable& table = quantDotsFor(kernels_.level);
  const QuantDotTable* dots = nullptr;
  if (quantized) dots = n == static_cast<int64_t>(g.active.size()) && table.single_row ? table.single_row : &table;
  std::vector<MatmulArgs> args;
  std::vector<const void*> xqs;
  const auto quantizeAll = [&](DType w, const float* rows, int64_t cols) {
    const int64_t per = std::max<int64_t>(1, (n + pool_.size() * 4 - 1) / (pool_.size() * 4));
    pool_.parallelFor(static_cast<int>((n + per - 1) / per), [&](int task, int) {
      quantizeActivations(*dots, w, rows, cols, task * per, std::min(n, (task + 1) * per), xq);
    });
  };
  // gate and up
  if (quantized) quantizeAll(wt, xg, h);
  const size_t q_row_h = quantized ? quantizedActivationBytes(wt, 1, h) : 0;
  for (int32_t e : g.active) {
    const int64_t off = g.offsets[e], m = g.offsets[e + 1] - off;
    const Tensor wg = experts.gateOf(e), wu = experts.upOf(e);
    countWeight(wg);
    countWeight(wu);
    countWeight(experts.downOf(e));
    args.push_back({xg + off * h, wg.data, wt, nullptr, gate + off * f, m, f, h});
    args.push_back({xg + off * h, wu.data, wt, nullptr, up + off * f, m, f, h});
    const void* xe = static_cast<const char*>(xq) + off * q_row_h;
    xqs.insert(xqs.end(), {xe, xe});
  }
  expertMatmuls(args, dots, xqs);
  siluMul(Tensor::of(gate, DType::kF32, n, f), Tensor::of(up, DType::kF32, n, f),
          Tensor::of(gate, DType::kF32, n, f));
  // down
  const DType wd = experts.down.dtype;
  if (quantized) quantizeAll(wd, gate, f);
  const size_t q_row_f = quantized ? quantizedActivationBytes(wd, 1, f) : 0;
  args.clear();
  xqs.clear();
  for (int32_t e : g.active) {
    const int64_t off = g.offsets[e], m = g.offsets[e + 1] - off;
    args.push_back({gate + off * f, experts.downOf(e).data, wd, nullptr, down + off * h, m, h, f});
    xqs.push_back(static_cast<const char*>(xq) + off * q_row_f);
  }
  expertMatmuls(args, dots, xqs);
  // each token's choices weighted and added in order
  const int32_t* pos = g.position.data();
  const float* wts = weights.as<float>();
  for (int64_t t = 0; t < t_rows; ++t) {
    float* o = out.as<float>() + t * h;
    for (int64_t j = 0; j < k; ++j) {
      const float w = wts[t * k + j];
      const float* d = down + static_cast<int64_t>(pos[t * k + j]) * h;
      if (j == 0) {
        for (int64_t i = 0; i < h; ++i) o[i] = d[i] * w;
      } else {
        for (int64_t i = 0; i < h; ++i) o[i] += d[i] * w;
      }
    }
  }
}

}  // namespace tandem::kernels::cpu
