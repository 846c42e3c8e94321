// The hip backend's mixture-of-experts ops (hip_backend.h): routing, the
// grouping by expert and the grouped matmuls all on the device
// (moe_route.h, moe_experts.h), with no host sync, so a decode step of a
// mixture is captured into a graph like a dense one's.
#include <algorithm>

#include "common/quant_blocks.h"
#include "common/status.h"
#include "kernels/hip/backend_check.h"
#include "kernels/hip/gpu_vendor.h"
#include "kernels/hip/hip_backend.h"
#include "kernels/hip/moe_experts.h"
#include "kernels/hip/moe_route.h"
#include "kernels/hip/quantize_act.h"
#include "kernels/hip/silu_mul.h"

namespace tandem::kernels::hip {

void HipBackend::moeRoute(const Tensor& logits, bool normalize, const Tensor& ids,
                          const Tensor& weights) {
  bind();
  TANDEM_CHECK(logits.dtype == DType::kF32 && ids.dtype == DType::kI32 && weights.dtype == DType::kF32);
  TANDEM_CHECK(ids.rows == logits.rows && weights.rows == logits.rows && ids.cols == weights.cols);
  check(launchMoeRoute(logits.as<float>(), logits.rows, static_cast<int>(logits.cols),
                       static_cast<int>(ids.cols), normalize, ids.as<int32_t>(), weights.as<float>(),
                       static_cast<hipStream_t>(stream_)),
        "moeRoute");
}

void HipBackend::moeExperts(const Tensor& x, const MoeExperts& experts, const Tensor& ids,
                            const Tensor& weights, const Tensor& out) {
  bind();
  TANDEM_CHECK(x.dtype == DType::kF32 && out.dtype == DType::kF32 && ids.dtype == DType::kI32);
  TANDEM_CHECK(out.rows == x.rows && out.cols == x.cols && ids.rows == x.rows && x.data != out.data);
  TANDEM_CHECK(weights.rows == ids.rows && weights.cols == ids.cols);
  TANDEM_CHECK(experts.gate.cols == x.cols && experts.down.cols == experts.ffn());
  const hipStream_t s = static_cast<hipStream_t>(stream_);
  const int64_t rows = x.rows, h = x.cols, f = experts.ffn(), n = rows * ids.cols;
  const int k = static_cast<int>(ids.cols), num = experts.num_experts;
  if (rows == 0) return;
  auto* base = static_cast<int32_t*>(scratch(moe_groups_, moeGroupsInts(n, num) * sizeof(int32_t)));
  const MoeGroups g = moeGroupsAt(base, n, num);
  check(launchMoeGroup(ids.as<int32_t>(), rows, k, num, g, s), "moeExperts (group)");
  const int slots = static_cast<int>(std::min<int64_t>(n, num));
  auto* gate = static_cast<float*>(scratch(moe_buffers_, static_cast<size_t>(n * (2 * f + h)) * sizeof(float)));
  float* up = gate + n * f;
  float* down = up + n * f;
  const DType wt = experts.gate.dtype, wd = experts.down.dtype;
  if (quant::isQuantized(wt)) {
    const size_t acts_bytes = static_cast<size_t>(std::max(rows * (h / gpu::kActValues), n * (f / gpu::kActValues)));
    auto* acts = static_cast<gpu::ActQ8*>(scratch(moe_acts_, acts_bytes * sizeof(gpu::ActQ8)));
    check(launchQuantizeActQ8(x.as<float>(), rows, h, quant::activationGroup(wt), acts, s),
          "moeExperts (quantize x)");
    check(launchMoeMatmulQuant(acts, g.token, experts.gate.data, wt, g, slots, gate, f, h, s), "moeExperts (gate)");
    check(launchMoeMatmulQuant(acts, g.token, experts.up.data, wt, g, slots, up, f, h, s), "moeExperts (up)");
  } else {
    check(launchMoeMatmul(x.as<float>(), g.token, experts.gate.data, wt, g, slots, gate, f, h, s),
          "moeExperts (gate)");
    check(launchMoeMatmul(x.as<float>(), g.token, experts.up.data, wt, g, slots, up, f, h, s),
          "moeExperts (up)");
  }
  check(launchSiluMul(gate, up, n * f, gate, DType::kF32, s), "moeExperts (silu)");
  if (quant::isQuantized(wd)) {
    auto* acts = static_cast<gpu::ActQ8*>(moe_acts_->data());
    check(launchQuantizeActQ8(gate, n, f, quant::activationGroup(wd), acts, s), "moeExperts (quantize)");
    check(launchMoeMatmulQuant(acts, nullptr, experts.down.data, wd, g, slots, down, h, f, s),
          "moeExperts (down)");
  } else {
    check(launchMoeMatmul(gate, nullptr, experts.down.data, wd, g, slots, down, h, f, s), "moeExperts (down)");
  }
  check(launchMoeCombine(down, g.position, weights.as<float>(), rows, k, h, out.as<float>(), s),
        "moeExperts (combine)");
}

}  // namespace tandem::kernels::hip
