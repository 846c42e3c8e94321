#include "kernels/hip/hip_backend.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/quant_blocks.h"
#include "common/status.h"
#include "kernels/hip/attention_decode.h"
#include "kernels/hip/backend_check.h"
#include "kernels/hip/attention_prefill.h"
#include "kernels/hip/attention_prefill_mma.h"
#include "kernels/hip/convert.h"
#include "kernels/hip/embedding.h"
#include "kernels/hip/gather_rows.h"
#include "kernels/hip/gemm.h"
#include "kernels/hip/gemm_quant.h"
#include "kernels/hip/gemv.h"
#include "kernels/hip/gemv_quant.h"
#include "kernels/hip/gpu_blas.h"
#include "kernels/hip/gpu_vendor.h"
#include "kernels/hip/kv_cache.h"
#include "kernels/hip/quantize_act.h"
#include "kernels/hip/residual_add.h"
#include "kernels/hip/rms_norm.h"
#include "kernels/hip/rope.h"
#include "kernels/hip/sampling.h"
#include "kernels/hip/silu_mul.h"
#include "kernels/rope_frequencies.h"

namespace tandem::kernels::hip {

namespace {

// size classes: powers of two up to 1 MiB, then whole MiB, so a reused block
// wastes at most half (small) or 1 MiB (large).
size_t sizeClass(size_t bytes) {
  constexpr size_t kMiB = size_t{1} << 20;
  if (bytes <= 256) return 256;
  if (bytes <= kMiB) return std::bit_ceil(bytes);
  return (bytes + kMiB - 1) / kMiB * kMiB;
}

std::string deviceMessage(hipError_t e) { return gpu::errorMessage(e); }

hipStream_t asStream(void* h) { return static_cast<hipStream_t>(h); }
hipEvent_t asEvent(void* h) { return static_cast<hipEvent_t>(h); }

KvShape shapeOf(const KvCacheView& cache) {
  const kvcache::KvLayout& l = cache.layout;
  return KvShape{l.num_layers, l.num_kv_heads * l.head_dim, l.block_size, cache.num_blocks,
                 l.dtype};
}

}  // namespace

class HipBackend::PooledBuffer : public Buffer {
 public:
  PooledBuffer(HipBackend* owner, void* data, size_t bytes, size_t rounded)
      : Buffer(data, bytes), owner_(owner), rounded_(rounded) {}
  ~PooledBuffer() override { owner_->give(data_, rounded_); }

 private:
  HipBackend* owner_;
  size_t rounded_;
};

namespace {

class PinnedBuffer : public Buffer {
 public:
  PinnedBuffer(void* data, size_t bytes) : Buffer(data, bytes) {}
  ~PinnedBuffer() override { (void)hipHostFree(data_); }
};

}  // namespace

absl::StatusOr<HipBackendPtr> HipBackend::create(int device, HipBackendOptions options) {
  int count = 0;
  const hipError_t e = hipGetDeviceCount(&count);
  if (e != hipSuccess || count == 0) {
    return absl::UnavailableError(absl::StrCat(
        "hip backend: no GPU device (the runtime reports ", e == hipSuccess ? count : 0,
        " devices", e == hipSuccess ? "" : absl::StrCat(": ", deviceMessage(e)), ")"));
  }
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(absl::StrCat("--device ", device, ": the runtime reports ",
                                                   count, " device(s), numbered 0 to ",
                                                   count - 1));
  }
  if (const hipError_t s = hipSetDevice(device); s != hipSuccess) {
    return absl::UnavailableError(
        absl::StrCat("hip backend: cannot use device ", device, ": ", deviceMessage(s)));
  }
  hipStream_t stream = nullptr, transfer = nullptr;
  hipEvent_t compute_done = nullptr, transfer_done = nullptr;
  if (hipStreamCreate(&stream) != hipSuccess || hipStreamCreate(&transfer) != hipSuccess ||
      hipEventCreate(&compute_done) != hipSuccess || hipEventCreate(&transfer_done) != hipSuccess) {
    return absl::UnavailableError("hip: cannot create streams and events (no device?)");
  }
  HipBackendPtr backend(new HipBackend(device, stream, transfer, compute_done, transfer_done));
  backend->decode_partition_ = options.decode_partition;
  std::string why = "no vendor BLAS asked for";
  if (options.vendor_blas) backend->blas_ = VendorBlas::open(&why);
  backend->gemm_path_ = backend->blas_ != nullptr ? backend->blas_->name()
                                                  : "tandem tiled GEMM (" + why + ")";
  return backend;
}

HipBackend::HipBackend(int device, Handle stream, Handle transfer, Handle compute_done,
                       Handle transfer_done)
    : device_(device),
      stream_(stream),
      transfer_(transfer),
      compute_done_(compute_done),
      transfer_done_(transfer_done) {}

void HipBackend::bind() const {
  thread_local int bound = -1;
  if (bound == device_) return;
  check(hipSetDevice(device_), "hipSetDevice");
  bound = device_;
}

HipBackend::~HipBackend() {
  bind();
  (void)hipDeviceSynchronize();
  decode_workspace_.reset();
  retired_scratch_.clear();
  act_workspace_.reset();
  moe_groups_.reset();
  moe_buffers_.reset();
  moe_acts_.reset();
  blas_activations_.reset();
  blas_weights_.reset();
  blas_.reset();
  copy_pairs_.reset();
  sample_inputs_.reset();
  sample_work_.reset();
  sample_marks_.reset();
  rope_tables_.clear();
  TANDEM_CHECK(live_buffers_ == 0 && "hip backend destroyed before its buffers");
  for (auto& [size, ptr] : pool_) (void)hipFree(ptr);
  (void)hipEventDestroy(asEvent(compute_done_));
  (void)hipEventDestroy(asEvent(transfer_done_));
  (void)hipStreamDestroy(asStream(stream_));
  (void)hipStreamDestroy(asStream(transfer_));
}

absl::StatusOr<void*> HipBackend::take(size_t bytes, size_t* rounded) {
  *rounded = sizeClass(bytes);
  if (auto it = pool_.find(*rounded); it != pool_.end()) {
    void* p = it->second;
    pool_.erase(it);
    pooled_bytes_ -= *rounded;
    return p;
  }
  void* p = nullptr;
  if (hipMalloc(&p, *rounded) != hipSuccess) {
    // give the pool back to the device and try once more
    for (auto& [size, ptr] : pool_) (void)hipFree(ptr);
    pool_.clear();
    pooled_bytes_ = 0;
    if (hipMalloc(&p, *rounded) != hipSuccess) {
      return absl::ResourceExhaustedError(absl::StrCat("hip: cannot allocate ", bytes, " bytes"));
    }
  }
  return p;
}

void HipBackend::give(void* ptr, size_t rounded) {
  // reuse is stream-ordered: later ops on the stream run after earlier users
  pool_.emplace(rounded, ptr);
  pooled_bytes_ += rounded;
  --live_buffers_;
}

absl::StatusOr<BufferPtr> HipBackend::allocate(size_t bytes) {
  bind();
  size_t rounded = 0;
  ASSIGN_OR_RETURN(void* p, take(bytes, &rounded));
  ++live_buffers_;
  return BufferPtr(new PooledBuffer(this, p, bytes, rounded));
}

absl::StatusOr<BufferPtr> HipBackend::importHost(const void* host, size_t bytes) {
  bind();
  ASSIGN_OR_RETURN(BufferPtr buf, allocate(bytes));
  check(hipMemcpy(buf->data(), host, bytes, hipMemcpyHostToDevice), "importHost");
  return buf;
}

absl::StatusOr<BufferPtr> HipBackend::allocatePinnedHost(size_t bytes) {
  bind();
  void* p = nullptr;
  if (hipHostMalloc(&p, bytes, 0) != hipSuccess) {
    return absl::ResourceExhaustedError(absl::StrCat("hip: cannot pin ", bytes, " host bytes"));
  }
  return BufferPtr(new PinnedBuffer(p, bytes));
}

void HipBackend::upload(void* device_dst, const void* host_src, size_t bytes) {
  bind();
  // after the ops already queued (they may still read the old contents), and
  // before returning (the caller may reuse host_src)
  check(hipMemcpyAsync(device_dst, host_src, bytes, hipMemcpyHostToDevice, asStream(stream_)),
        "upload");
  check(hipStreamSynchronize(asStream(stream_)), "upload");
}

void HipBackend::download(void* host_dst, const void* device_src, size_t bytes) {
  bind();
  check(hipMemcpyAsync(host_dst, device_src, bytes, hipMemcpyDeviceToHost, asStream(stream_)),
        "download");
  check(hipStreamSynchronize(asStream(stream_)), "download");
}

absl::Status HipBackend::checkedSynchronize() {
  bind();
  const hipError_t e = hipStreamSynchronize(asStream(stream_));
  const hipError_t t = hipStreamSynchronize(asStream(transfer_));
  if (e != hipSuccess) return absl::InternalError(deviceMessage(e));
  if (t != hipSuccess) return absl::InternalError(deviceMessage(t));
  return absl::OkStatus();
}

void HipBackend::synchronize() {
  const absl::Status s = checkedSynchronize();
  if (!s.ok()) {
    std::fprintf(stderr, "hip backend: kernel failed: %s\n", std::string(s.message()).c_str());
    std::abort();
  }
}

void* HipBackend::scratch(BufferPtr& slot, size_t bytes) {
  if (slot == nullptr || slot->bytes() < bytes) {
    const size_t grown = std::max({bytes, size_t{4096}, slot != nullptr ? 2 * slot->bytes() : 0});
    auto buf = allocate(grown);
    TANDEM_CHECK(buf.ok() && "hip backend: scratch allocation");
    // a graph captured before may still use the old area: retired, not freed
    if (slot != nullptr) retired_scratch_.push_back(std::move(slot));
    slot = std::move(*buf);
  }
  return slot->data();
}

const float* HipBackend::inverseFrequencies(const RopeParams& params) {
  std::vector<float> inv = ropeInverseFrequencies(params);
  for (const RopeTable& t : rope_tables_) {
    if (t.inv == inv) return static_cast<const float*>(t.device->data());
  }
  auto buf = allocate(inv.size() * sizeof(float));
  TANDEM_CHECK(buf.ok() && "hip backend: rope table allocation");
  RopeTable& t = rope_tables_.emplace_back(RopeTable{std::move(inv), std::move(*buf)});
  check(hipMemcpyAsync(t.device->data(), t.inv.data(), t.inv.size() * sizeof(float),
                       hipMemcpyHostToDevice, asStream(stream_)),
        "rope table upload");
  return static_cast<const float*>(t.device->data());
}

void HipBackend::embedding(const Tensor& table, const Tensor& ids, const Tensor& out) {
  bind();
  TANDEM_CHECK(ids.dtype == DType::kI32 && out.dtype == DType::kF32);
  TANDEM_CHECK(out.rows == ids.rows && out.cols == table.cols);
  check(launchEmbedding(table.data, table.dtype, table.rows, table.cols, ids.as<int32_t>(),
                        ids.rows, out.as<float>(), asStream(stream_)),
        "embedding");
}

void HipBackend::rmsNorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  bind();
  TANDEM_CHECK(x.dtype == DType::kF32 && isActivationType(out.dtype));
  TANDEM_CHECK(x.cols == weight.numel() && out.rows == x.rows && out.cols == x.cols);
  TANDEM_CHECK(out.dtype == DType::kF32 || out.data != x.data);
  check(launchRmsNorm(x.as<float>(), weight.data, weight.dtype, x.rows, x.cols, eps, out.data,
                      out.dtype, asStream(stream_)),
        "rmsNorm");
}

bool HipBackend::isActivationType(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}

// 16-bit x where the matmul goes to the vendor BLAS with 16-bit operands
// (blasRows); the GEMVs of decode rows read F32 x.
DType HipBackend::gemmInputType(int64_t rows, DType weight) const {
  if (blas_ == nullptr || rows <= kGemvMaxRows || weight == DType::kF32) return DType::kF32;
  return blasOperand(weight);
}

DType HipBackend::blasOperand(DType weight) {
  if (weight == DType::kF32) return DType::kF32;
  return weight == DType::kBF16 ? DType::kBF16 : DType::kF16;
}

void HipBackend::matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) {
  SharedX shared;
  matmulShared(x, w, bias, y, &shared);
}

void HipBackend::matmuls(const Tensor& x, std::span<const MatmulOutput> outputs) {
  SharedX shared;
  // decode rows and weights of one type and width: one GEMV launch for all
  // (q, k and v; gate and up)
  const bool one_launch =
      x.rows <= kGemvMaxRows && !outputs.empty() && outputs.size() <= kGemvMaxOutputs &&
      std::all_of(outputs.begin(), outputs.end(), [&](const MatmulOutput& o) {
        return o.w->dtype == outputs[0].w->dtype && o.w->cols == x.cols && o.y->rows == x.rows &&
               o.y->cols == o.w->rows;
      });
  if (!one_launch) {
    for (const MatmulOutput& o : outputs) matmulShared(x, *o.w, o.bias, *o.y, &shared);
    return;
  }
  bind();
  TANDEM_CHECK(x.dtype == DType::kF32);
  std::vector<GemvOutput> gemv;
  for (const MatmulOutput& o : outputs) {
    TANDEM_CHECK(o.y->dtype == DType::kF32);
    TANDEM_CHECK(o.bias == nullptr || (o.bias->dtype == DType::kF32 && o.bias->numel() == o.w->rows));
    gemv.push_back({o.w->data, o.bias != nullptr ? o.bias->as<float>() : nullptr, o.y->as<float>(),
                    o.w->rows});
  }
  const DType dtype = outputs[0].w->dtype;
  const hipStream_t s = asStream(stream_);
  if (quant::isQuantized(dtype)) {
    TANDEM_CHECK(x.cols % quant::blockValues(dtype) == 0);
    auto* acts =
        static_cast<gpu::ActQ8*>(scratch(act_workspace_, gemvQuantWorkspace(x.rows, x.cols)));
    check(launchQuantizeActQ8(x.as<float>(), x.rows, x.cols, quant::activationGroup(dtype), acts, s),
          "matmuls (quantize x)");
    check(launchGemvQuantOutputs(acts, gemv, dtype, x.rows, x.cols, s), "matmuls (gemv, quantized)");
    return;
  }
  check(launchGemvOutputs(x.as<float>(), gemv, dtype, x.rows, x.cols, s), "matmuls (gemv)");
}

void HipBackend::matmulShared(const Tensor& x, const Tensor& w, const Tensor* bias,
                              const Tensor& y, SharedX* shared) {
  bind();
  TANDEM_CHECK(y.dtype == DType::kF32);
  // 16-bit x only as gemmInputType() asks for it
  TANDEM_CHECK(x.dtype == DType::kF32 || x.dtype == gemmInputType(x.rows, w.dtype));
  TANDEM_CHECK(x.cols == w.cols && y.rows == x.rows && y.cols == w.rows);
  TANDEM_CHECK(bias == nullptr || (bias->dtype == DType::kF32 && bias->numel() == w.rows));
  // block-quantized weights: rows of whole blocks
  TANDEM_CHECK(!quant::isQuantized(w.dtype) || w.cols % quant::blockValues(w.dtype) == 0);
  const float* b = bias != nullptr ? bias->as<float>() : nullptr;
  if (x.rows <= kGemvMaxRows) {
    gemvRows(x, w, b, y, shared);
  } else if (blas_ != nullptr) {
    blasRows(x, w, b, y, shared);
  } else if (quant::isQuantized(w.dtype)) {
    // dequantized into the LDS tile
    check(launchGemmQuant(x.as<float>(), w.data, w.dtype, b, y.as<float>(), x.rows, w.rows,
                          x.cols, asStream(stream_)),
          "matmul (gemm, quantized)");
  } else {
    check(launchGemm(x.as<float>(), w.data, w.dtype, b, y.as<float>(), x.rows, w.rows, x.cols,
                     asStream(stream_)),
          "matmul (gemm)");
  }
}

void HipBackend::gemvRows(const Tensor& x, const Tensor& w, const float* bias, const Tensor& y,
                          SharedX* shared) {
  const hipStream_t s = asStream(stream_);
  if (quant::isQuantized(w.dtype)) {
    const int group = quant::activationGroup(w.dtype);
    if (shared->acts_q8 == nullptr || shared->acts_group != group) {
      auto* acts = static_cast<gpu::ActQ8*>(
          scratch(act_workspace_, gemvQuantWorkspace(x.rows, x.cols)));
      check(launchQuantizeActQ8(x.as<float>(), x.rows, x.cols, group, acts, s),
            "matmul (quantize x)");
      shared->acts_q8 = acts;
      shared->acts_group = group;
    }
    check(launchGemvQuant(static_cast<const gpu::ActQ8*>(shared->acts_q8), w.data, w.dtype, bias,
                          y.as<float>(), x.rows, w.rows, x.cols, s),
          "matmul (gemv, quantized)");
    return;
  }
  check(launchGemv(x.as<float>(), w.data, w.dtype, bias, y.as<float>(), x.rows, w.rows, x.cols, s),
        "matmul (gemv)");
}

// F32 weights as they are; F16/BF16 weights with x rounded to their type
// (the matrix cores' operands, as PyTorch feeds them); quantized weights
// dequantized to F16 first, with x in F16.
void HipBackend::blasRows(const Tensor& x, const Tensor& w, const float* bias, const Tensor& y,
                          SharedX* shared) {
  const hipStream_t s = asStream(stream_);
  const void* a = x.data;
  const void* wb = w.data;
  BlasOperand type = BlasOperand::kF32;
  if (w.dtype != DType::kF32) {
    const DType operand = blasOperand(w.dtype);
    type = operand == DType::kBF16 ? BlasOperand::kBF16 : BlasOperand::kF16;
    if (x.dtype == operand) {
      // written in 16 bits by the op before (gemmInputType)
      shared->x16 = x.data;
      shared->x16_type = operand;
    } else if (shared->x16 == nullptr || shared->x16_type != operand) {
      void* xs = scratch(blas_activations_, static_cast<size_t>(x.numel()) * 2);
      check(launchConvertF32(x.as<float>(), x.numel(), operand, xs, s), "matmul (convert x)");
      shared->x16 = xs;
      shared->x16_type = operand;
    }
    a = shared->x16;
    if (quant::isQuantized(w.dtype)) {
      auto* ws = static_cast<uint16_t*>(scratch(blas_weights_, static_cast<size_t>(w.numel()) * 2));
      check(launchDequantizeF16(w.data, w.dtype, w.rows, w.cols, ws, s), "matmul (dequantize)");
      wb = ws;
    }
  }
  check(blas_->gemm(type, a, wb, y.as<float>(), x.rows, w.rows, x.cols, s), "matmul (vendor BLAS)");
  if (bias != nullptr) check(launchAddBias(y.as<float>(), bias, x.rows, w.rows, s), "matmul (bias)");
}

// a captured graph of the compute stream (captureOps).
class HipBackend::Graph final : public OpGraph {
 public:
  Graph(HipBackend* backend, hipGraph_t graph, hipGraphExec_t exec)
      : backend_(backend), graph_(graph), exec_(exec) {}
  ~Graph() override {
    backend_->bind();
    (void)hipGraphExecDestroy(exec_);
    (void)hipGraphDestroy(graph_);
  }
  absl::Status replay() override {
    backend_->bind();
    const hipError_t e = hipGraphLaunch(exec_, asStream(backend_->stream_));
    if (e != hipSuccess) return absl::InternalError("hip: graph launch: " + deviceMessage(e));
    return absl::OkStatus();
  }

 private:
  HipBackend* backend_;
  hipGraph_t graph_;
  hipGraphExec_t exec_;
};

absl::StatusOr<OpGraphPtr> HipBackend::captureOps(const std::function<void()>& ops) {
  bind();
  // relaxed: the caching pool may still hipMalloc while capturing
  hipError_t e = hipStreamBeginCapture(asStream(stream_), hipStreamCaptureModeRelaxed);
  if (e != hipSuccess) return absl::InternalError("hip: begin capture: " + deviceMessage(e));
  ops();
  hipGraph_t graph = nullptr;
  e = hipStreamEndCapture(asStream(stream_), &graph);
  if (e != hipSuccess) return absl::InternalError("hip: end capture: " + deviceMessage(e));
  hipGraphExec_t exec = nullptr;
  if (e = gpu::graphInstantiate(&exec, graph); e != hipSuccess) {
    (void)hipGraphDestroy(graph);
    return absl::InternalError("hip: graph instantiate: " + deviceMessage(e));
  }
  return OpGraphPtr(new Graph(this, graph, exec));
}

absl::Status HipBackend::vendorGemm(const Tensor& x, const Tensor& w, const Tensor& y) {
  bind();
  if (blas_ == nullptr) return absl::UnavailableError(gemm_path_);
  TANDEM_CHECK(x.dtype == w.dtype && y.dtype == DType::kF32 && x.cols == w.cols);
  const BlasOperand type = w.dtype == DType::kF16    ? BlasOperand::kF16
                           : w.dtype == DType::kBF16 ? BlasOperand::kBF16
                                                     : BlasOperand::kF32;
  const hipError_t e =
      blas_->gemm(type, x.data, w.data, y.as<float>(), x.rows, w.rows, x.cols, asStream(stream_));
  if (e != hipSuccess) return absl::InternalError("vendor BLAS: " + deviceMessage(e));
  return absl::OkStatus();
}

void HipBackend::rope(const Tensor& x, const Tensor& positions, const RopeParams& params) {
  bind();
  const int d = params.head_dim;
  TANDEM_CHECK(x.dtype == DType::kF32 && d > 0 && x.cols % d == 0 && positions.rows == x.rows);
  check(launchRope(x.as<float>(), positions.as<int32_t>(), inverseFrequencies(params), x.rows,
                   static_cast<int>(x.cols / d), d, params.style == RopeStyle::kInterleaved,
                   asStream(stream_)),
        "rope");
}

void HipBackend::writeKv(const Tensor& k, const Tensor& v, const Tensor& slots,
                         const KvCacheView& cache, int layer) {
  bind();
  const kvcache::KvLayout& l = cache.layout;
  const int64_t width = static_cast<int64_t>(l.num_kv_heads) * l.head_dim;
  TANDEM_CHECK(k.cols == width && v.cols == width && slots.rows == k.rows);
  TANDEM_CHECK(layer >= 0 && layer < l.num_layers);
  check(launchWriteKv(k.as<float>(), v.as<float>(), slots.as<int32_t>(), k.rows, cache.data,
                      shapeOf(cache), layer, asStream(stream_)),
        "writeKv");
}

void HipBackend::pagedAttention(const Tensor& q, const KvCacheView& cache, int layer,
                                const AttentionBatch& batch, const Tensor& out) {
  bind();
  const kvcache::KvLayout& l = cache.layout;
  TANDEM_CHECK(q.cols == static_cast<int64_t>(batch.num_heads) * l.head_dim);
  TANDEM_CHECK(batch.num_heads % l.num_kv_heads == 0 && l.head_dim <= kAttentionMaxHeadDim);
  AttentionArgs a;
  a.q = q.as<float>();
  a.cache = cache.data;
  a.shape = shapeOf(cache);
  a.num_kv_heads = l.num_kv_heads;
  a.head_dim = l.head_dim;
  a.layer = layer;
  a.seq_info = batch.seq_info.as<int32_t>();
  a.block_tables = batch.block_tables.as<int32_t>();
  a.num_seqs = batch.num_seqs;
  a.max_q_len = batch.max_q_len;
  a.max_context = batch.max_context;
  a.num_heads = batch.num_heads;
  a.scale = batch.scale;
  a.out = out.as<float>();
  if (batch.max_q_len == 1 && batch.num_heads / l.num_kv_heads <= kDecodeMaxGroup) {
    float* ws = static_cast<float*>(scratch(
        decode_workspace_, attentionDecodeWorkspace(a, decode_partition_) * sizeof(float)));
    check(launchAttentionDecode(a, ws, asStream(stream_), decode_partition_),
          "pagedAttention (decode)");
  } else if (attentionPrefillMmaShape(a)) {
    check(launchAttentionPrefillMma(a, asStream(stream_)), "pagedAttention (prefill, matrix cores)");
  } else {
    check(launchAttentionPrefill(a, asStream(stream_)), "pagedAttention (prefill)");
  }
}

void HipBackend::siluMul(const Tensor& gate, const Tensor& up, const Tensor& out) {
  bind();
  TANDEM_CHECK(gate.numel() == up.numel() && out.numel() == gate.numel());
  TANDEM_CHECK(gate.dtype == DType::kF32 && up.dtype == DType::kF32 && isActivationType(out.dtype));
  TANDEM_CHECK(out.dtype == DType::kF32 || (out.data != gate.data && out.data != up.data));
  check(launchSiluMul(gate.as<float>(), up.as<float>(), gate.numel(), out.data, out.dtype,
                      asStream(stream_)),
        "siluMul");
}

void HipBackend::add(const Tensor& a, const Tensor& b, const Tensor& out) {
  bind();
  TANDEM_CHECK(a.numel() == b.numel() && out.numel() == a.numel());
  check(launchResidualAdd(a.as<float>(), b.as<float>(), a.numel(), out.as<float>(),
                          asStream(stream_)),
        "add");
}

void HipBackend::addRmsNorm(const Tensor& x, const Tensor& delta, const Tensor& weight, float eps,
                            const Tensor& out) {
  bind();
  TANDEM_CHECK(x.dtype == DType::kF32 && delta.dtype == DType::kF32 && isActivationType(out.dtype));
  TANDEM_CHECK(x.cols == weight.numel() && delta.numel() == x.numel() && out.numel() == x.numel());
  TANDEM_CHECK(out.data != x.data);
  TANDEM_CHECK(out.dtype == DType::kF32 || out.data != delta.data);
  check(launchAddRmsNorm(x.as<float>(), delta.as<float>(), weight.data, weight.dtype, x.rows,
                         x.cols, eps, out.data, out.dtype, asStream(stream_)),
        "addRmsNorm");
}

void HipBackend::ropeWriteKv(const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& positions, const RopeParams& params,
                             const Tensor& slots, const KvCacheView& cache, int layer) {
  bind();
  const kvcache::KvLayout& l = cache.layout;
  const int d = params.head_dim;
  const int64_t width = static_cast<int64_t>(l.num_kv_heads) * l.head_dim;
  TANDEM_CHECK(q.dtype == DType::kF32 && d > 0 && q.cols % d == 0 && d == l.head_dim);
  TANDEM_CHECK(k.cols == width && v.cols == width && slots.rows == k.rows &&
               positions.rows == q.rows && q.rows == k.rows);
  TANDEM_CHECK(layer >= 0 && layer < l.num_layers);
  check(launchRopeWriteKv(q.as<float>(), k.as<float>(), v.as<float>(), positions.as<int32_t>(),
                          inverseFrequencies(params), q.rows, static_cast<int>(q.cols / d),
                          l.num_kv_heads, d, params.style == RopeStyle::kInterleaved,
                          slots.as<int32_t>(), cache.data, shapeOf(cache), layer,
                          asStream(stream_)),
        "ropeWriteKv");
}

void HipBackend::greedyTokens(const Tensor& logits, const Tensor& ids, const Tensor& logprobs) {
  bind();
  TANDEM_CHECK(ids.dtype == DType::kI32 && ids.rows == logits.rows && logprobs.rows == logits.rows);
  check(launchGreedy(logits.as<float>(), logits.rows, logits.cols, ids.as<int32_t>(),
                     logprobs.as<float>(), asStream(stream_)),
        "greedyTokens");
}

void HipBackend::gatherRows(const Tensor& x, const Tensor& rows, const Tensor& out) {
  bind();
  TANDEM_CHECK(rows.dtype == DType::kI32 && out.rows == rows.rows && out.cols == x.cols);
  check(launchGatherRows(x.as<float>(), x.rows, x.cols, rows.as<int32_t>(), rows.rows,
                         out.as<float>(), asStream(stream_)),
        "gatherRows");
}

void HipBackend::copyBlocks(const KvCacheView& src, std::span<const int32_t> src_ids,
                            const KvCacheView& dst, std::span<const int32_t> dst_ids) {
  bind();
  TANDEM_CHECK(src_ids.size() == dst_ids.size());
  TANDEM_CHECK(src.layout.blockBytes() == dst.layout.blockBytes());
  if (src_ids.empty()) return;
  for (size_t i = 0; i < src_ids.size(); ++i) {
    TANDEM_CHECK(src_ids[i] >= 0 && src_ids[i] < src.num_blocks);
    TANDEM_CHECK(dst_ids[i] >= 0 && dst_ids[i] < dst.num_blocks);
  }
  // the previous copy must be done with the pairs before they are replaced
  check(hipStreamSynchronize(asStream(transfer_)), "copyBlocks");
  copy_pairs_host_.clear();
  for (size_t i = 0; i < src_ids.size(); ++i) {
    copy_pairs_host_.push_back(src_ids[i]);
    copy_pairs_host_.push_back(dst_ids[i]);
  }
  const size_t pair_bytes = copy_pairs_host_.size() * sizeof(int32_t);
  auto* pairs = static_cast<int32_t*>(scratch(copy_pairs_, pair_bytes));
  // the transfer stream starts after the compute work queued so far (it
  // wrote the blocks), and compute waits for the transfer (it reads them)
  check(hipEventRecord(asEvent(compute_done_), asStream(stream_)), "copyBlocks");
  check(hipStreamWaitEvent(asStream(transfer_), asEvent(compute_done_), 0), "copyBlocks");
  check(hipMemcpyAsync(pairs, copy_pairs_host_.data(), pair_bytes, hipMemcpyHostToDevice,
                       asStream(transfer_)),
        "copyBlocks");
  check(launchCopyBlocks(src.data, src.num_blocks, dst.data, dst.num_blocks, pairs,
                         static_cast<int>(src_ids.size()), src.layout.blockBytes(),
                         asStream(transfer_)),
        "copyBlocks");
  check(hipEventRecord(asEvent(transfer_done_), asStream(transfer_)), "copyBlocks");
  check(hipStreamWaitEvent(asStream(stream_), asEvent(transfer_done_), 0), "copyBlocks");
}

}  // namespace tandem::kernels::hip

// ---- host staging: pinned registrations and transfer streams ----

namespace tandem::kernels::hip {
namespace {

class PinnedRegistration : public Buffer {
 public:
  PinnedRegistration(void* data, size_t bytes) : Buffer(data, bytes) {}
  ~PinnedRegistration() override { (void)hipHostUnregister(data_); }
};

// copies on a stream of their own; device errors come back from
// synchronize() as Status (a transfer fails, the worker carries on).
class HipTransferStream final : public TransferStream {
 public:
  HipTransferStream(int device, hipStream_t stream) : device_(device), stream_(stream) {}
  ~HipTransferStream() override {
    const DeviceScope scope = bind();
    (void)hipStreamSynchronize(stream_);
    (void)hipStreamDestroy(stream_);
  }

  // TransferStream
  void copyToHost(void* host_dst, const void* device_src, size_t bytes) override {
    const DeviceScope scope = bind();
    note(hipMemcpyAsync(host_dst, device_src, bytes, hipMemcpyDeviceToHost, stream_));
  }
  void copyToDevice(void* device_dst, const void* host_src, size_t bytes) override {
    const DeviceScope scope = bind();
    note(hipMemcpyAsync(device_dst, host_src, bytes, hipMemcpyHostToDevice, stream_));
  }
  absl::Status synchronize() override {
    const DeviceScope scope = bind();
    note(hipStreamSynchronize(stream_));
    const hipError_t e = first_error_;
    first_error_ = hipSuccess;
    if (e != hipSuccess) {
      return absl::InternalError(absl::StrCat("hip transfer stream: ", deviceMessage(e)));
    }
    return absl::OkStatus();
  }

 private:
  // makes device_ current for one call and restores the caller's device
  // after it (HipBackend::bind caches what it set per thread).
  class DeviceScope {
   public:
    explicit DeviceScope(int device) {
      if (hipGetDevice(&previous_) != hipSuccess) previous_ = -1;
      if (previous_ != device) (void)hipSetDevice(device);
    }
    ~DeviceScope() {
      if (previous_ >= 0) (void)hipSetDevice(previous_);
    }

   private:
    int previous_ = -1;
  };
  DeviceScope bind() const { return DeviceScope(device_); }
  void note(hipError_t e) {
    if (e != hipSuccess && first_error_ == hipSuccess) first_error_ = e;
  }

  const int device_;
  hipStream_t stream_;
  hipError_t first_error_ = hipSuccess;
};

}  // namespace

absl::StatusOr<BufferPtr> HipBackend::pinHost(void* host, size_t bytes) {
  bind();
  if (const hipError_t e = hipHostRegister(host, bytes, hipHostRegisterDefault); e != hipSuccess) {
    return absl::UnavailableError(
        absl::StrCat("hip: cannot pin ", bytes, " host bytes: ", deviceMessage(e)));
  }
  return BufferPtr(new PinnedRegistration(host, bytes));
}

absl::StatusOr<TransferStreamPtr> HipBackend::createTransferStream() {
  bind();
  hipStream_t stream = nullptr;
  if (const hipError_t e = hipStreamCreate(&stream); e != hipSuccess) {
    return absl::UnavailableError(
        absl::StrCat("hip: cannot create a transfer stream: ", deviceMessage(e)));
  }
  return TransferStreamPtr(new HipTransferStream(device_, stream));
}

}  // namespace tandem::kernels::hip
