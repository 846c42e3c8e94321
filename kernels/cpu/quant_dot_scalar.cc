// The portable dot products of quant_dot.h: integer sums per block, the
// reference the avx2 table is tested against.
#include <algorithm>
#include <cmath>

#include "common/quant_blocks.h"
#include "kernels/cpu/quant_dot.h"

namespace tandem::kernels::cpu {

namespace {

using namespace tandem::quant;

// d = max|x| / 127, q = round(x / d): the symmetric 8-bit block of ggml's q8.
void quantizeBlock(const float* x, int n, float* d, int8_t* q) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  *d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::lrintf(x[i] * id));
}

// the scale is rounded to F16, as ggml's block_q8_0 stores it (the values
// are rounded with the unrounded one): llama.cpp's numbers exactly.
void quantize32(const float* x, ActBlock32* out, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    quantizeBlock(x + 32 * i, 32, &out[i].d, out[i].qs);
    out[i].d = f16ToF32(f32ToF16(out[i].d));
  }
}

void quantize256(const float* x, ActBlock256* out, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i) {
    quantizeBlock(x + 256 * i, 256, &out[i].d, out[i].qs);
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += out[i].qs[16 * j + l];
      out[i].bsums[j] = static_cast<int16_t>(sum);
    }
    for (int j = 0; j < 8; ++j) out[i].sub_sums[j] = static_cast<float>(out[i].bsums[2 * j] + out[i].bsums[2 * j + 1]);
  }
}

float dotQ8_0(const void* w, const ActBlock32* x, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(w);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    int s = 0;
    for (int j = 0; j < 32; ++j) s += b[i].qs[j] * x[i].qs[j];
    sum += f16ToF32(b[i].d) * x[i].d * static_cast<float>(s);
  }
  return sum;
}

float dotQ4_0(const void* w, const ActBlock32* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(w);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    int s = 0;
    for (int j = 0; j < 16; ++j) {
      s += ((b[i].qs[j] & 0xF) - 8) * x[i].qs[j];
      s += ((b[i].qs[j] >> 4) - 8) * x[i].qs[j + 16];
    }
    sum += f16ToF32(b[i].d) * x[i].d * static_cast<float>(s);
  }
  return sum;
}

// sum over sub-blocks j of d*sc_j*dot(q_j, x_j) - dmin*m_j*sum(x_j).
float dotQ4_K(const void* w, const ActBlock256* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(w);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 256; ++i) {
    const uint8_t* q = b[i].qs;
    const int8_t* a = x[i].qs;
    int dots = 0, mins = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      scaleMinK4(j, b[i].scales, &sc, &m);
      // sub-block j: the low nibbles of q[32 (j/2) ..] for even j, high for odd
      const uint8_t* qj = q + 32 * (j / 2);
      int s = 0;
      for (int l = 0; l < 32; ++l) s += ((j % 2 == 0) ? (qj[l] & 0xF) : (qj[l] >> 4)) * a[32 * j + l];
      dots += sc * s;
      mins += m * (x[i].bsums[2 * j] + x[i].bsums[2 * j + 1]);
    }
    sum += x[i].d * (f16ToF32(b[i].d) * static_cast<float>(dots) -
                     f16ToF32(b[i].dmin) * static_cast<float>(mins));
  }
  return sum;
}

float dotQ6_K(const void* w, const ActBlock256* x, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(w);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 256; ++i) {
    int8_t q[256];
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    for (int h = 0; h < 2; ++h, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        q[128 * h + l] = static_cast<int8_t>(((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32);
        q[128 * h + l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        q[128 * h + l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        q[128 * h + l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    }
    int dots = 0;
    for (int ib = 0; ib < 16; ++ib) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += q[16 * ib + l] * x[i].qs[16 * ib + l];
      dots += b[i].scales[ib] * s;
    }
    sum += f16ToF32(b[i].d) * x[i].d * static_cast<float>(dots);
  }
  return sum;
}

// the table's form: one row at a time (the reference the simd tables are
// tested against).
template <typename ActBlock, float (*dot)(const void*, const ActBlock*, int64_t)>
void dotRows(const void* w, const ActBlock* x, int64_t x_stride, int rows, int64_t n, float* out) {
  for (int r = 0; r < rows; ++r) out[r] = dot(w, x + r * x_stride, n);
}

}  // namespace

const QuantDotTable& scalarQuantDots() {
  static const QuantDotTable table{SimdLevel::kScalar,
                                   false,
                                   kDotRows,
                                   0,
                                   false,
                                   false,
                                   quantize32,
                                   quantize256,
                                   dotRows<ActBlock32, dotQ8_0>,
                                   dotRows<ActBlock32, dotQ4_0>,
                                   dotRows<ActBlock256, dotQ4_K>,
                                   dotRows<ActBlock256, dotQ6_K>};
  return table;
}

bool processorHasAvx512Vnni() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

bool processorHasAvxVnni() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avxvnni") && __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

const QuantDotTable& quantDotsFor(SimdLevel level) {
  if (level != SimdLevel::kScalar && environmentTurnsOff("TANDEM_CPU_VNNI")) return avx2QuantDots();
  switch (level) {
    case SimdLevel::kScalar: return scalarQuantDots();
    case SimdLevel::kAvx2: return avxVnniQuantDots();
    case SimdLevel::kAvx512: return avx512VnniQuantDots();
  }
  return scalarQuantDots();
}

}  // namespace tandem::kernels::cpu
