#include "kernels/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/quant_blocks.h"
#include "common/status.h"
#include "kernels/cpu/amx_matmul.h"
#include "kernels/cpu/quant_matmul.h"
#include "kernels/host_buffer.h"
#include "kernels/rope_frequencies.h"

namespace tandem::kernels::cpu {

namespace {

const KernelTable& kernelsFor(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512: return avx512Kernels();
    case SimdLevel::kAvx2: return avx2Kernels();
    case SimdLevel::kScalar: break;
  }
  return scalarKernels();
}

// below this many multiply-adds a matmul runs on one thread: waking the
// pool costs more than it saves.
constexpr int64_t kMinParallelMatmulWork = 1 << 16;

}  // namespace

absl::StatusOr<CpuBackendPtr> CpuBackend::create(const CpuBackendOptions& options) {
  const SimdLevel best = detectSimdLevel();
  SimdLevel level = best;
  if (options.simd_level.has_value()) {
    level = *options.simd_level;
  } else if (const char* env = std::getenv("TANDEM_CPU_SIMD"); env != nullptr && *env != '\0') {
    ASSIGN_OR_RETURN(level, parseSimdLevel(env));
  }
  if (level > best) {
    return absl::InvalidArgumentError(absl::StrCat("simd level ", std::string(simdLevelName(level)),
                                                   " is not supported by this processor (best: ",
                                                   std::string(simdLevelName(best)), ")"));
  }
  if (options.num_threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat("bad thread count ", options.num_threads));
  }
  int threads = options.num_threads;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  CpuBackendOptions::Weights weights = CpuBackendOptions::Weights::kHugePages;
  if (options.weights.has_value()) {
    weights = *options.weights;
  } else if (const char* env = std::getenv("TANDEM_CPU_WEIGHTS"); env != nullptr && *env != '\0') {
    if (std::string_view(env) == "mapped") {
      weights = CpuBackendOptions::Weights::kMapped;
    } else if (std::string_view(env) != "huge") {
      return absl::InvalidArgumentError(
          absl::StrCat("TANDEM_CPU_WEIGHTS must be 'mapped' or 'huge', not '", env, "'"));
    }
  }
  const bool copy_weights = weights == CpuBackendOptions::Weights::kHugePages && transparentHugePagesAvailable();
  return CpuBackendPtr(new CpuBackend(kernelsFor(level), threads, options.amx, copy_weights));
}

template <class Fn>
void CpuBackend::parallelRanges(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  const int64_t pieces_wanted = static_cast<int64_t>(pool_.size()) * 4;
  const int64_t piece = std::max(grain, (n + pieces_wanted - 1) / pieces_wanted);
  const int num_pieces = static_cast<int>((n + piece - 1) / piece);
  if (num_pieces == 1) {
    fn(int64_t{0}, n);
    return;
  }
  pool_.parallelFor(num_pieces, [&](int task, int) {
    const int64_t begin = task * piece;
    fn(begin, std::min(n, begin + piece));
  });
}

absl::StatusOr<BufferPtr> CpuBackend::allocate(size_t bytes) { return HostBuffer::allocate(bytes); }

absl::StatusOr<BufferPtr> CpuBackend::importHost(const void* host, size_t bytes) {
  if (weight_arena_ != nullptr) return weight_arena_->copyIn(host, bytes);
  return HostBuffer::alias(host, bytes);
}

void CpuBackend::upload(void* device_dst, const void* host_src, size_t bytes) {
  std::memcpy(device_dst, host_src, bytes);
}

void CpuBackend::download(void* host_dst, const void* device_src, size_t bytes) {
  std::memcpy(host_dst, device_src, bytes);
}

void CpuBackend::embedding(const Tensor& table, const Tensor& ids, const Tensor& out) {
  TANDEM_CHECK(ids.dtype == DType::kI32 && out.dtype == DType::kF32);
  TANDEM_CHECK(out.rows == ids.rows && out.cols == table.cols);
  const size_t row_bytes = table.rowBytes();
  for (int64_t i = 0; i < ids.rows; ++i) {
    const int32_t id = ids.as<int32_t>()[i];
    TANDEM_CHECK(id >= 0 && id < table.rows);
    kernels_.toF32(static_cast<const char*>(table.data) + id * row_bytes, table.dtype,
                   out.as<float>() + i * out.cols, table.cols);
  }
}

void CpuBackend::rmsNorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  TANDEM_CHECK(x.dtype == DType::kF32 && out.dtype == DType::kF32);
  TANDEM_CHECK(x.cols == weight.numel() && out.rows == x.rows && out.cols == x.cols);
  const int64_t d = x.cols;
  parallelRanges(x.rows, std::max<int64_t>(1, 16384 / d), [&](int64_t begin, int64_t end) {
    kernels_.rmsNorm(x.as<float>() + begin * d, weight.data, weight.dtype, d, eps,
                     out.as<float>() + begin * d, end - begin);
  });
}

namespace {

MatmulArgs matmulArgs(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) {
  TANDEM_CHECK(x.dtype == DType::kF32 && y.dtype == DType::kF32);
  TANDEM_CHECK(x.cols == w.cols && y.rows == x.rows && y.cols == w.rows);
  TANDEM_CHECK(bias == nullptr || (bias->dtype == DType::kF32 && bias->numel() == w.rows));
  return MatmulArgs{x.as<float>(), w.data, w.dtype, bias != nullptr ? bias->as<float>() : nullptr,
                    y.as<float>(), x.rows, w.rows, x.cols};
}

}  // namespace

ParallelTasks CpuBackend::poolTasks() {
  return [this](int count, const std::function<void(int)>& fn) {
    if (count == 1 || pool_.size() == 1) {
      for (int t = 0; t < count; ++t) fn(t);
    } else {
      pool_.parallelFor(count, [&](int task, int) { fn(task); });
    }
  };
}

void CpuBackend::matmuls(const Tensor& x, std::span<const MatmulOutput> outputs) {
  std::vector<MatmulArgs> group;
  group.reserve(outputs.size());
  for (const MatmulOutput& o : outputs) group.push_back(matmulArgs(x, *o.w, o.bias, *o.y));
  if (canGroupQuantMatmuls(group)) {
    for (const MatmulOutput& o : outputs) countWeight(*o.w);
    quantMatmulGroup(group, kernels_, amx_, pool_.size(), poolTasks());
    return;
  }
  Backend::matmuls(x, outputs);
}

void CpuBackend::matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) {
  const MatmulArgs args = matmulArgs(x, w, bias, y);
  countWeight(w);
  // prefill on the AMX tiles where the processor has them (amx_matmul.h:
  // F32, F16, BF16 and quantized weights)
  if (amx_ && useAmxMatmul(args)) {
    amxMatmul(args, pool_.size(), poolTasks());
    return;
  }
  if (quant::isQuantized(w.dtype)) {
    quantMatmul(args, kernels_, amx_, pool_.size(), poolTasks());
    return;
  }
  if (args.m * args.n * args.k < kMinParallelMatmulWork || pool_.size() == 1) {
    kernels_.matmul(args, 0, args.n);
    return;
  }
  // split the rows of w: each is streamed from memory once per task. Small
  // panels when m is small (decode: pure streaming, balance matters most);
  // larger ones for prefill so a panel is reused across the rows of x.
  const int64_t panels_wanted = static_cast<int64_t>(pool_.size()) * (x.rows <= 4 ? 8 : 4);
  int64_t panel = (args.n + panels_wanted - 1) / panels_wanted;
  // gemm packs w 32 rows at a time (avx-512); keep task edges on panel edges
  const int64_t align = x.rows <= 4 ? 4 : 32;
  panel = std::max<int64_t>(16, (panel + align - 1) / align * align);
  const int num_panels = static_cast<int>((args.n + panel - 1) / panel);
  pool_.parallelFor(num_panels, [&](int task, int) {
    const int64_t begin = task * panel;
    kernels_.matmul(args, begin, std::min(args.n, begin + panel));
  });
}

void CpuBackend::rope(const Tensor& x, const Tensor& positions, const RopeParams& params) {
  const int d = params.head_dim;
  TANDEM_CHECK(x.dtype == DType::kF32 && x.cols % d == 0 && positions.rows == x.rows);
  const std::vector<float> inv = ropeInverseFrequencies(params);
  const int half = d / 2;
  const int64_t heads = x.cols / d;
  parallelRanges(x.rows, 8, [&](int64_t begin, int64_t end) {
    std::vector<float> cs(2 * half);
    for (int64_t t = begin; t < end; ++t) {
      const float pos = static_cast<float>(positions.as<int32_t>()[t]);
      for (int i = 0; i < half; ++i) {
        // the angle is rounded to float as HF does; cos and sin are exact.
        const double angle = pos * inv[i];
        cs[i] = static_cast<float>(std::cos(angle));
        cs[half + i] = static_cast<float>(std::sin(angle));
      }
      for (int64_t h = 0; h < heads; ++h) {
        float* v = x.as<float>() + t * x.cols + h * d;
        for (int i = 0; i < half; ++i) {
          const int a = params.style == RopeStyle::kHalf ? i : 2 * i;
          const int b = params.style == RopeStyle::kHalf ? i + half : 2 * i + 1;
          const float x0 = v[a], x1 = v[b];
          v[a] = x0 * cs[i] - x1 * cs[half + i];
          v[b] = x1 * cs[i] + x0 * cs[half + i];
        }
      }
    }
  });
}

void CpuBackend::siluMul(const Tensor& gate, const Tensor& up, const Tensor& out) {
  TANDEM_CHECK(gate.numel() == up.numel() && out.numel() == gate.numel());
  parallelRanges(gate.numel(), 16384, [&](int64_t begin, int64_t end) {
    kernels_.siluMul(gate.as<float>() + begin, up.as<float>() + begin, out.as<float>() + begin,
                     end - begin);
  });
}

void CpuBackend::add(const Tensor& a, const Tensor& b, const Tensor& out) {
  TANDEM_CHECK(a.numel() == b.numel() && out.numel() == a.numel());
  parallelRanges(a.numel(), 32768, [&](int64_t begin, int64_t end) {
    kernels_.add(a.as<float>() + begin, b.as<float>() + begin, out.as<float>() + begin, end - begin);
  });
}

void CpuBackend::gatherRows(const Tensor& x, const Tensor& rows, const Tensor& out) {
  TANDEM_CHECK(rows.dtype == DType::kI32 && out.rows == rows.rows && out.cols == x.cols);
  for (int64_t i = 0; i < rows.rows; ++i) {
    const int32_t r = rows.as<int32_t>()[i];
    TANDEM_CHECK(r >= 0 && r < x.rows);
    std::memcpy(out.as<float>() + i * out.cols, x.as<float>() + r * x.cols, x.rowBytes());
  }
}

void CpuBackend::copyBlocks(const KvCacheView& src, std::span<const int32_t> src_ids,
                            const KvCacheView& dst, std::span<const int32_t> dst_ids) {
  TANDEM_CHECK(src_ids.size() == dst_ids.size());
  TANDEM_CHECK(src.layout.blockBytes() == dst.layout.blockBytes());
  const size_t bytes = src.layout.blockBytes();
  for (size_t i = 0; i < src_ids.size(); ++i) {
    TANDEM_CHECK(src_ids[i] >= 0 && src_ids[i] < src.num_blocks);
    TANDEM_CHECK(dst_ids[i] >= 0 && dst_ids[i] < dst.num_blocks);
  }
  parallelRanges(static_cast<int64_t>(src_ids.size()), 4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      std::memmove(static_cast<char*>(dst.data) + static_cast<size_t>(dst_ids[i]) * bytes,
                   static_cast<const char*>(src.data) + static_cast<size_t>(src_ids[i]) * bytes,
                   bytes);
    }
  });
}

}  // namespace tandem::kernels::cpu
