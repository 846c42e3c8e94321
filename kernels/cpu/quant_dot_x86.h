// The x86 dot products of quant_dot.h, shared by quant_dot_avx2.cc,
// quant_dot_avx_vnni.cc and quant_dot_avx512.cc: each includes this file
// inside its own anonymous namespace after defining
//   __m256i dpbusd(__m256i acc, __m256i u, __m256i s)
// = acc + (per int32 lane) the sum of 4 products u8 * s8: maddubs + madd on
// AVX2, one VPDPBUSD with AVX-VNNI or AVX512-VNNI (VL); and
//   constexpr bool kUnsignedAct32
// true where dpbusd does not saturate (VPDPBUSD: int32 sums; maddubs's int16
// pairs would overflow on 255 * 127 * 2): the q8_0/q4_0 activations are then
// stored with 128 added (QuantDotTable::x32_offset) and taken as the unsigned
// operand, sum((x + 128) w) - 128 sum(w) with the correction once per weight
// block, the same int32 lanes as the sign trick without its per-row sign;
// and
//   constexpr bool kGroupedAct32
// where the q8_0/q4_0 activations are stored in transposed runs of 8
// blocks (QuantDotTable::x32_grouped): a dot call transposes the 8 weight
// blocks of a run once, and each row's 8 dpbusd steps leave the 8 blocks'
// integer sums in one register's lanes, scaled by d_w * d_x and accumulated
// with one multiply, conversion and FMA per 8 blocks (instead of per
// block): the scalar table's arithmetic per block. Without kUnsignedAct32
// each step takes the sign trick (|w| made once a call).
//   constexpr bool kTile32, kTile256, kPrefill32, kPrefill256
// the table's tiles (q8_0/q4_0; q4_k) and prefill flags (quant_dot.h); and
//   constexpr bool kGroupedAct256
// where the k-quant activations are transposed the same way (x256_grouped):
// lane j sums sub-block j, which takes its scale per lane (dotQ4_KGrouped,
// dotQ6_KGrouped). With maddubs (no kUnsignedAct32) the grouped kernels
// also sum steps' int16 pairs before widening them: a 4-bit weight's pairs
// are at most 15 * 127 * 2, so all 8 steps of a q4_k row fit int16 and
// take one madd (instead of one per step); 6-bit ones, 2 steps a madd.
//
// Register blocking: a dot call takes one weight row and up to the table's
// rows (quant_dot.h, kDotRows) activation rows;
// every weight block is loaded, unpacked (nibbles, 6-bit values, scales, f16
// factors) and made unsigned once and multiplied with every row, so a batch
// shares the weight's bandwidth and its unpacking. Without kUnsignedAct32,
// signed q8_0 / q4_0 weights use the sign trick (|w| * (x * sign(w))) so the
// unsigned operand is the weight, made once per block. Ungrouped, the
// k-quants multiply the unsigned 4/6-bit values with maddubs and their 8-bit
// sub-block scales with madd (the scales do not fit the bytes of a VPDPBUSD
// operand).
// The tiles are in quant_tiles_x86.h, included below.
// Included only by files built with -mavx2 -mfma -mf16c at least, after
// <immintrin.h> and <vector>.

float halfToFloat(uint16_t h) { return _cvtsh_ss(h); }

// A dot streams its weight row from memory (decode reads each weight once a
// step): each block loop step asks for the bytes kWeightPrefetchBytes ahead of
// it into L2, so enough lines are in flight for the row's stream and the step
// into the next rows (the hardware prefetchers alone left a batch-1 q8_0 decode
// at ~60% of the read bandwidth on an Intel Xeon whose weights sit in a large
// L3: model_runner_bench --threads 2, bench/RESULTS.md "the whole table on the
// Intel Xeon with AMX"). `bytes` is the step's size; its lines are asked for
// once each (a step that is no multiple of 64 bytes may ask for one twice).
constexpr int64_t kWeightPrefetchBytes = 8192;

template <int Bytes>
inline __attribute__((always_inline)) void prefetchWeightsAhead(const void* step) {
  const char* ahead = static_cast<const char*>(step) + kWeightPrefetchBytes;
  for (int b = 0; b < Bytes; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T1);
}

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// out[r] = hsum(acc[r]) for r < R, with hsum's additions in its order;
// 8 rows as one transposing reduction (a quarter of the instructions).
template <int R>
void hsumRows(const __m256* acc, float* out) {
  if constexpr (R == 8) {
    __m256 x[4];
    for (int r = 0; r < 4; ++r) {
      // halves: acc[r] low + high, acc[r + 4] low + high
      x[r] = _mm256_add_ps(_mm256_permute2f128_ps(acc[r], acc[r + 4], 0x20),
                           _mm256_permute2f128_ps(acc[r], acc[r + 4], 0x31));
    }
    __m256 z[2];
    for (int p = 0; p < 2; ++p) {
      // per half: lanes 0 + 2 and 1 + 3 of two rows
      z[p] = _mm256_add_ps(_mm256_shuffle_ps(x[2 * p], x[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm256_shuffle_ps(x[2 * p], x[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    const __m256 sums = _mm256_add_ps(_mm256_shuffle_ps(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                      _mm256_shuffle_ps(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1)));
    _mm256_storeu_ps(out, sums);
  } else if constexpr (R == 16) {
    hsumRows<8>(acc, out);
    hsumRows<8>(acc + 8, out + 8);
  } else {
    for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
  }
}

float hmaxAbs(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 32 floats * id, rounded to nearest even, into 32 int8 (as the scalar
// table: lrintf of the same product).
void quantize32Values(const float* x, float id, int8_t* q) {
  const __m256 mul = _mm256_set1_ps(id);
  __m256i i[4];
  for (int j = 0; j < 4; ++j) {
    i[j] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * j), mul),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  const __m256i p16a = _mm256_packs_epi32(i[0], i[1]);
  const __m256i p16b = _mm256_packs_epi32(i[2], i[3]);
  const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
  const __m256i ordered = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), ordered);
}

// v[j] word t -> v[t] word j: an 8 x 8 transpose of 32-bit words.
inline __attribute__((always_inline)) void transpose8x32(__m256i* v) {
  __m256i a[8], c[8];
  for (int j = 0; j < 8; j += 2) {
    a[j] = _mm256_unpacklo_epi32(v[j], v[j + 1]);
    a[j + 1] = _mm256_unpackhi_epi32(v[j], v[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    c[j] = _mm256_unpacklo_epi64(a[j], a[j + 2]);
    c[j + 1] = _mm256_unpackhi_epi64(a[j], a[j + 2]);
    c[j + 2] = _mm256_unpacklo_epi64(a[j + 1], a[j + 3]);
    c[j + 3] = _mm256_unpackhi_epi64(a[j + 1], a[j + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    v[j] = _mm256_permute2x128_si256(c[j], c[j + 4], 0x20);
    v[j + 4] = _mm256_permute2x128_si256(c[j], c[j + 4], 0x31);
  }
}

template <bool Grouped>
void quantize32(const float* x, ActBlock32* out, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    const float amax = hmaxAbs(x, 32);
    // the scale rounded to F16, as ggml's block_q8_0 stores it (the
    // values are rounded with the unrounded one), as the scalar table
    out[i].d = f16ToF32(f32ToF16(amax / 127.0f));
    quantize32Values(x, amax != 0.0f ? 127.0f / amax : 0.0f, out[i].qs);
    if constexpr (kUnsignedAct32) {
      auto* q = reinterpret_cast<__m256i*>(out[i].qs);
      _mm256_storeu_si256(q, _mm256_xor_si256(_mm256_loadu_si256(q), _mm256_set1_epi8(char(0x80))));
    }
  }
  if constexpr (Grouped) {
    // each run of 8 blocks: the 8 d's, then the values' words transposed
    for (int64_t g = 0; g + 8 <= n / 32; g += 8) {
      __m256i v[8];
      for (int j = 0; j < 8; ++j) v[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(out[g + j].qs));
      transpose8x32(v);
      const __m256 d = _mm256_setr_ps(out[g].d, out[g + 1].d, out[g + 2].d, out[g + 3].d, out[g + 4].d,
                                      out[g + 5].d, out[g + 6].d, out[g + 7].d);
      char* run = reinterpret_cast<char*>(out + g);
      _mm256_storeu_ps(reinterpret_cast<float*>(run), d);
      for (int t = 0; t < 8; ++t) _mm256_storeu_si256(reinterpret_cast<__m256i*>(run + 32 + 32 * t), v[t]);
    }
  }
}

void quantize256(const float* x, ActBlock256* out, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    const float amax = hmaxAbs(x, 256);
    out[i].d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 8; ++j) quantize32Values(x + 32 * j, id, out[i].qs + 32 * j);
    for (int j = 0; j < 16; ++j) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(out[i].qs + 16 * j));
      __m128i s = _mm_madd_epi16(_mm_add_epi16(_mm_cvtepi8_epi16(b), _mm_cvtepi8_epi16(_mm_srli_si128(b, 8))),
                                 _mm_set1_epi16(1));
      s = _mm_hadd_epi32(s, s);
      s = _mm_hadd_epi32(s, s);
      out[i].bsums[j] = static_cast<int16_t>(_mm_cvtsi128_si32(s));
    }
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(out[i].bsums));
    _mm256_storeu_ps(out[i].sub_sums, _mm256_cvtepi32_ps(_mm256_madd_epi16(bsums, _mm256_set1_epi16(1))));
    if constexpr (kGroupedAct256) {
      // the values transposed by 4-byte words (QuantDotTable::x256_grouped)
      __m256i v[8];
      for (int j = 0; j < 8; ++j) v[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(out[i].qs + 32 * j));
      transpose8x32(v);
      for (int t = 0; t < 8; ++t) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[i].qs + 32 * t), v[t]);
    }
  }
}

__m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// q8_0 and q4_0: per block, the signed weight bytes w (made once), then per
// row sum(|w| * (x * sign(w))) (or sum((x + 128) w) - 128 sum(w), see
// kUnsignedAct32) scaled by d_w * d_x.
template <int R, bool Grouped, typename Block, __m256i (*weightBytes)(const Block&)>
void dotSigned32(const void* w, const ActBlock32* x, int64_t x_stride, int64_t n, float* out) {
  const auto* b = static_cast<const Block*>(w);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  int64_t i = 0;
  if constexpr (Grouped) {
    __m256 accg[R];
    for (int r = 0; r < R; ++r) accg[r] = _mm256_setzero_ps();
    for (; i + 8 <= n / 32; i += 8) {
      prefetchWeightsAhead<8 * sizeof(Block)>(b + i);
      __m256i wt[8];
      for (int j = 0; j < 8; ++j) wt[j] = weightBytes(b[i + j]);
      transpose8x32(wt);
      const __m256 dw = _mm256_cvtph_ps(_mm_setr_epi16(
          static_cast<short>(b[i].d), static_cast<short>(b[i + 1].d), static_cast<short>(b[i + 2].d),
          static_cast<short>(b[i + 3].d), static_cast<short>(b[i + 4].d), static_cast<short>(b[i + 5].d),
          static_cast<short>(b[i + 6].d), static_cast<short>(b[i + 7].d)));
      if constexpr (kUnsignedAct32) {
        // -128 * each block's weight sum, in its lane
        __m256i corr = _mm256_setzero_si256(), corr2 = _mm256_setzero_si256();
        for (int t = 0; t < 8; t += 2) {
          corr = dpbusd(corr, _mm256_set1_epi8(char(0x80)), wt[t]);
          corr2 = dpbusd(corr2, _mm256_set1_epi8(char(0x80)), wt[t + 1]);
        }
        const __m256i start = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_add_epi32(corr, corr2));
        // steps outer, rows inner, 8 rows at a time (R rows where R > 8 is
        // no multiple of 8): independent chains, VPDPBUSD's latency hidden
        // by the rows; `start` is added after them (they need not wait)
        constexpr int kChains = R <= 8 || R % 8 != 0 ? R : 8;
        for (int r0 = 0; r0 < R; r0 += kChains) {
          __m256i s[kChains];
          for (int c = 0; c < kChains; ++c) s[c] = _mm256_setzero_si256();
          for (int t = 0; t < 8; ++t) {
            for (int c = 0; c < kChains; ++c) {
              const char* run = reinterpret_cast<const char*>(x + (r0 + c) * x_stride + i);
              s[c] = dpbusd(s[c], load32(run + 32 + 32 * t), wt[t]);
            }
          }
          for (int c = 0; c < kChains; ++c) {
            const char* run = reinterpret_cast<const char*>(x + (r0 + c) * x_stride + i);
            const __m256 dx = _mm256_loadu_ps(reinterpret_cast<const float*>(run));
            accg[r0 + c] = _mm256_fmadd_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(_mm256_add_epi32(s[c], start)),
                                           accg[r0 + c]);
          }
        }
      } else {
        // the sign trick a step: |w| once a call, x * sign(w) per row
        __m256i wabs[8];
        for (int t = 0; t < 8; ++t) wabs[t] = _mm256_sign_epi8(wt[t], wt[t]);
        for (int r = 0; r < R; ++r) {
          const char* run = reinterpret_cast<const char*>(x + r * x_stride + i);
          __m256i s = _mm256_setzero_si256(), s2 = _mm256_setzero_si256();
          for (int t = 0; t < 8; t += 2) {
            s = dpbusd(s, wabs[t], _mm256_sign_epi8(load32(run + 32 + 32 * t), wt[t]));
            s2 = dpbusd(s2, wabs[t + 1], _mm256_sign_epi8(load32(run + 64 + 32 * t), wt[t + 1]));
          }
          s = _mm256_add_epi32(s, s2);
          const __m256 dx = _mm256_loadu_ps(reinterpret_cast<const float*>(run));
          accg[r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(s), accg[r]);
        }
      }
    }
    for (int r = 0; r < R; ++r) acc[r] = accg[r];
  }
  for (; i < n / 32; ++i) {
    prefetchWeightsAhead<sizeof(Block)>(b + i);
    const __m256i wq = weightBytes(b[i]);
    // d_w * d_x as one lane-wise multiply of the broadcast factors (the
    // same float product as the scalar one, one instruction a row)
    const __m256 dw = _mm256_set1_ps(halfToFloat(b[i].d));
    if constexpr (kUnsignedAct32) {
      // -128 * (the lane sums of w): each row's sum starts from it
      const __m256i start = _mm256_sub_epi32(_mm256_setzero_si256(),
                                             dpbusd(_mm256_setzero_si256(), _mm256_set1_epi8(char(0x80)), wq));
      for (int r = 0; r < R; ++r) {
        const ActBlock32& xb = x[r * x_stride + i];
        const __m256i s = dpbusd(start, load32(xb.qs), wq);
        acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_broadcast_ss(&xb.d)), _mm256_cvtepi32_ps(s), acc[r]);
      }
    } else {
      const __m256i wabs = _mm256_sign_epi8(wq, wq);
      for (int r = 0; r < R; ++r) {
        const ActBlock32& xb = x[r * x_stride + i];
        const __m256i s = dpbusd(_mm256_setzero_si256(), wabs, _mm256_sign_epi8(load32(xb.qs), wq));
        acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_broadcast_ss(&xb.d)), _mm256_cvtepi32_ps(s), acc[r]);
      }
    }
  }
  hsumRows<R>(acc, out);
}

__m256i q8_0Bytes(const BlockQ8_0& b) { return load32(b.qs); }

__m256i q4_0Bytes(const BlockQ4_0& b) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  // low nibbles are values 0..15, high nibbles 16..31
  const __m256i nibbles = _mm256_and_si256(
      _mm256_inserti128_si256(_mm256_castsi128_si256(packed), _mm_srli_epi16(packed, 4), 1),
      _mm256_set1_epi8(0xF));
  return _mm256_sub_epi8(nibbles, _mm256_set1_epi8(8));
}

#include "kernels/cpu/q4_k_scales_x86.h"
#include "kernels/cpu/quant_tiles_x86.h"

// the k-quants: sub-block outer, rows inner, so the live registers are one
// unpacked sub-block, its scale and the rows' sums (some spilled on AVX2's 16).
// with grouped activations (kGroupedAct32): the 8 unpacked 32-value
// sub-blocks transposed like the activations, so 8 VPDPBUSD steps leave the
// 8 sub-blocks' sums in the lanes, times their scales with one multiply.
template <int R>
void dotQ4_KGrouped(const BlockQ4_K* b, const ActBlock256* x, int64_t x_stride, int64_t n, float* out) {
  const __m256i low4 = _mm256_set1_epi8(0xF);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    prefetchWeightsAhead<sizeof(BlockQ4_K)>(b + i);
    const __m128i sm = scalesMinsK4(b[i]);
    __m256i u[8];
    for (int j = 0; j < 4; ++j) {
      const __m256i v = load32(b[i].qs + 32 * j);
      u[2 * j] = _mm256_and_si256(v, low4);
      u[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
    }
    transpose8x32(u);
    // d * sc_j and dmin * m_j per lane j (exact: 11 x 6 significant bits),
    // so a row's integer sums need no multiply but the floats'
    const __m256 dsc = _mm256_mul_ps(_mm256_set1_ps(halfToFloat(b[i].d)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm)));
    const __m256 dm = _mm256_mul_ps(_mm256_set1_ps(halfToFloat(b[i].dmin)),
                                    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8))));
    const __m256i ones = _mm256_set1_epi16(1);
    const ActBlock256* xb = x + i;
    for (int r = 0; r < R; ++r) {
      const ActBlock256& xr = xb[r * x_stride];
      // lane j: sub-block j's sum of q * x (and sub_sums j: of x)
      __m256i sumq;
      if constexpr (kUnsignedAct32) {
        __m256i s = _mm256_setzero_si256(), s2 = _mm256_setzero_si256();
        for (int t = 0; t < 8; t += 2) {
          s = dpbusd(s, u[t], load32(xr.qs + 32 * t));
          s2 = dpbusd(s2, u[t + 1], load32(xr.qs + 32 * t + 32));
        }
        sumq = _mm256_add_epi32(s, s2);
      } else {
        // int16 pairs of all 8 steps, |sum| <= 8 * 15 * 127 * 2 < 2^15
        __m256i p = _mm256_maddubs_epi16(u[0], load32(xr.qs));
        __m256i p2 = _mm256_maddubs_epi16(u[1], load32(xr.qs + 32));
        for (int t = 2; t < 8; t += 2) {
          p = _mm256_add_epi16(p, _mm256_maddubs_epi16(u[t], load32(xr.qs + 32 * t)));
          p2 = _mm256_add_epi16(p2, _mm256_maddubs_epi16(u[t + 1], load32(xr.qs + 32 * t + 32)));
        }
        sumq = _mm256_madd_epi16(_mm256_add_epi16(p, p2), ones);
      }
      const __m256 t = _mm256_fmsub_ps(_mm256_cvtepi32_ps(sumq), dsc, _mm256_mul_ps(_mm256_loadu_ps(xr.sub_sums), dm));
      acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(&xr.d), t, acc[r]);
    }
  }
  hsumRows<R>(acc, out);
}

template <int R>
void dotQ6_KGrouped(const BlockQ6_K* b, const ActBlock256* x, int64_t x_stride, int64_t n, float* out) {
  const __m256i low4 = _mm256_set1_epi8(0xF);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  // the even and the odd sub-block scales, in order
  const __m128i split = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    prefetchWeightsAhead<sizeof(BlockQ6_K)>(b + i);
    const int8_t* sc = b[i].scales;
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    // q[c]: values 32c .. 32c + 31 (sub-blocks 2c, 2c + 1), unsigned 0..63
    __m256i q[8];
    for (int h = 0; h < 2; ++h, ql += 64, qh += 32) {
      const __m256i la = load32(ql), lb = load32(ql + 32), hb = load32(qh);
      q[4 * h] = _mm256_or_si256(_mm256_and_si256(la, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), bits45));
      q[4 * h + 1] =
          _mm256_or_si256(_mm256_and_si256(lb, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), bits45));
      q[4 * h + 2] =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), low4), _mm256_and_si256(hb, bits45));
      q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), low4),
                                     _mm256_and_si256(_mm256_srli_epi16(hb, 2), bits45));
    }
    // steps 0..3: lane c sums sub-block 2c, steps 4..7: sub-block 2c + 1
    transpose8x32(q);
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sc));
    const __m256i scales16 = _mm256_cvtepi8_epi16(sc8);
    const __m256 dw = _mm256_set1_ps(halfToFloat(b[i].d));
    const ActBlock256* xb = x + i;
    // lane c's scale: for VPDPBUSD's int32 sums, the even and the odd
    // sub-blocks' in turn; for maddubs's int16 pairs, each in both halves
    // of its lane, so the madd that widens a pair also scales it
    __m256i sc_even, sc_odd;
    if constexpr (kUnsignedAct32) {
      const __m128i sc_split = _mm_shuffle_epi8(sc8, split);
      sc_even = _mm256_cvtepi8_epi32(sc_split);
      sc_odd = _mm256_cvtepi8_epi32(_mm_srli_si128(sc_split, 8));
    } else {
      const __m128i even2 = _mm_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14);
      sc_even = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, even2));
      sc_odd = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, _mm_add_epi8(even2, _mm_set1_epi8(1))));
    }
    for (int r = 0; r < R; ++r) {
      const ActBlock256& xr = xb[r * x_stride];
      __m256i sumi;
      if constexpr (kUnsignedAct32) {
        __m256i e = _mm256_setzero_si256(), o = _mm256_setzero_si256();
        for (int t = 0; t < 4; ++t) {
          e = dpbusd(e, q[t], load32(xr.qs + 32 * t));
          o = dpbusd(o, q[t + 4], load32(xr.qs + 32 * t + 128));
        }
        sumi = _mm256_add_epi32(_mm256_mullo_epi32(e, sc_even), _mm256_mullo_epi32(o, sc_odd));
      } else {
        // int16 pairs of 2 steps, |sum| <= 2 * 63 * 127 * 2 < 2^15, widened
        // and scaled by one madd (|scale * pair sum| < 2^22)
        __m256i e = _mm256_setzero_si256(), o = _mm256_setzero_si256();
        for (int t = 0; t < 4; t += 2) {
          const __m256i pe = _mm256_add_epi16(_mm256_maddubs_epi16(q[t], load32(xr.qs + 32 * t)),
                                              _mm256_maddubs_epi16(q[t + 1], load32(xr.qs + 32 * t + 32)));
          const __m256i po = _mm256_add_epi16(_mm256_maddubs_epi16(q[t + 4], load32(xr.qs + 32 * t + 128)),
                                              _mm256_maddubs_epi16(q[t + 5], load32(xr.qs + 32 * t + 160)));
          e = _mm256_add_epi32(e, _mm256_madd_epi16(pe, sc_even));
          o = _mm256_add_epi32(o, _mm256_madd_epi16(po, sc_odd));
        }
        sumi = _mm256_add_epi32(e, o);
      }
      // q - 32: the bias is -32 * sum_ib sc[ib] * bsums[ib]
      const __m256i bias = _mm256_madd_epi16(load32(xr.bsums), scales16);
      const __m256i s = _mm256_sub_epi32(sumi, _mm256_slli_epi32(bias, 5));
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_broadcast_ss(&xr.d), dw), _mm256_cvtepi32_ps(s), acc[r]);
    }
  }
  hsumRows<R>(acc, out);
}

template <int R>
void dotQ4_KRows(const void* w, const ActBlock256* x, int64_t x_stride, int64_t n, float* out) {
  const auto* b = static_cast<const BlockQ4_K*>(w);
  if constexpr (kGroupedAct256) {
    dotQ4_KGrouped<R>(b, x, x_stride, n, out);
    return;
  }
  const __m256i low4 = _mm256_set1_epi8(0xF);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    prefetchWeightsAhead<sizeof(BlockQ4_K)>(b + i);
    // the 6-bit scales and mins unpacked in registers (as the grouped
    // kernel; through a stored array they stalled on store forwarding,
    // ~20% of this kernel): sc_all word j = scale j, mins word 2j and 2j + 1
    // = min j (it covers bsums 2j, 2j + 1)
    const __m128i sm = scalesMinsK4(b[i]);
    const __m256i sc_all = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    const __m128i m8 = _mm_srli_si128(sm, 8);
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
    const ActBlock256* xb = x + i;
    __m256i sumi[R];
    for (int r = 0; r < R; ++r) sumi[r] = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      // sub-block 2j: the low nibbles of 32 bytes, 2j + 1: the high ones
      const __m256i v = load32(b[i].qs + 32 * j);
      const __m256i ql = _mm256_and_si256(v, low4);
      const __m256i qh = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      const __m256i sl = _mm256_shuffle_epi8(sc_all, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * j))));
      const __m256i sh = _mm256_shuffle_epi8(sc_all, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * j + 1))));
      for (int r = 0; r < R; ++r) {
        const int8_t* xq = xb[r * x_stride].qs + 64 * j;
        const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(ql, load32(xq)), sl);
        const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(qh, load32(xq + 32)), sh);
        sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(pl, ph));
      }
    }
    const float d = halfToFloat(b[i].d), dmin = halfToFloat(b[i].dmin);
    for (int r = 0; r < R; ++r) {
      const ActBlock256& xr = xb[r * x_stride];
      const __m256i summ = _mm256_madd_epi16(load32(xr.bsums), mins);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(xr.d * d), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
      acc[r] = _mm256_fnmadd_ps(_mm256_set1_ps(xr.d * dmin), _mm256_cvtepi32_ps(summ), acc[r]);
    }
  }
  hsumRows<R>(acc, out);
}

template <int R>
void dotQ6_KRows(const void* w, const ActBlock256* x, int64_t x_stride, int64_t n, float* out) {
  const auto* b = static_cast<const BlockQ6_K*>(w);
  if constexpr (kGroupedAct256) {
    dotQ6_KGrouped<R>(b, x, x_stride, n, out);
    return;
  }
  const __m256i low4 = _mm256_set1_epi8(0xF);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    prefetchWeightsAhead<sizeof(BlockQ6_K)>(b + i);
    const int8_t* sc = b[i].scales;
    const ActBlock256* xb = x + i;
    __m256i sumi[R];
    for (int r = 0; r < R; ++r) sumi[r] = _mm256_setzero_si256();
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    for (int h = 0; h < 2; ++h, ql += 64, qh += 32) {
      const __m256i la = load32(ql), lb = load32(ql + 32), hb = load32(qh);
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(la, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), bits45));
      q[1] = _mm256_or_si256(_mm256_and_si256(lb, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), bits45));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), low4), _mm256_and_si256(hb, bits45));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), low4),
                             _mm256_and_si256(_mm256_srli_epi16(hb, 2), bits45));
      for (int k = 0; k < 4; ++k) {
        const int s = 8 * h + 2 * k;  // sub-blocks s (bytes 0..15) and s + 1
        const __m256i scale = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(sc[s])),
                                                      _mm_set1_epi16(sc[s + 1]), 1);
        for (int r = 0; r < R; ++r) {
          const __m256i p = _mm256_maddubs_epi16(q[k], load32(xb[r * x_stride].qs + 128 * h + 32 * k));
          sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(p, scale));
        }
      }
    }
    // q - 32: the bias is -32 * sum_ib sc[ib] * bsums[ib], a madd per row
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    const float dw = halfToFloat(b[i].d);
    for (int r = 0; r < R; ++r) {
      const ActBlock256& xr = xb[r * x_stride];
      const __m256i bias = _mm256_madd_epi16(load32(xr.bsums), scales16);
      const __m256i s = _mm256_sub_epi32(sumi[r], _mm256_slli_epi32(bias, 5));
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(xr.d * dw), _mm256_cvtepi32_ps(s), acc[r]);
    }
  }
  hsumRows<R>(acc, out);
}

// the table's entry: rows in [1, MaxRows] to the register-blocked kernel
// (R counts up to the one that matches).
template <int MaxRows, typename ActBlock, template <int> class Kernel, int R = 1>
void dotRows(const void* w, const ActBlock* x, int64_t x_stride, int rows, int64_t n, float* out) {
  if constexpr (R == MaxRows) {
    Kernel<R>::run(w, x, x_stride, n, out);
  } else if (rows == R) {
    Kernel<R>::run(w, x, x_stride, n, out);
  } else {
    dotRows<MaxRows, ActBlock, Kernel, R + 1>(w, x, x_stride, rows, n, out);
  }
}

// the q8_0 / q4_0 kernels on grouped or plain activation blocks.
template <bool Grouped>
struct Signed32 {
  template <int R>
  struct Q8_0 {
    static void run(const void* w, const ActBlock32* x, int64_t s, int64_t n, float* out) {
      dotSigned32<R, Grouped, BlockQ8_0, q8_0Bytes>(w, x, s, n, out);
    }
  };
  template <int R>
  struct Q4_0 {
    static void run(const void* w, const ActBlock32* x, int64_t s, int64_t n, float* out) {
      dotSigned32<R, Grouped, BlockQ4_0, q4_0Bytes>(w, x, s, n, out);
    }
  };
};
template <int R>
struct Q4_KKernel {
  static void run(const void* w, const ActBlock256* x, int64_t s, int64_t n, float* out) {
    dotQ4_KRows<R>(w, x, s, n, out);
  }
};
template <int R>
struct Q6_KKernel {
  static void run(const void* w, const ActBlock256* x, int64_t s, int64_t n, float* out) {
    dotQ6_KRows<R>(w, x, s, n, out);
  }
};

// MaxRows: the rows one call takes (see kDotRows); Grouped32: whether the
// q8_0/q4_0 activations are grouped (kGroupedAct32, or a table's
// single_row variant without it).
template <int MaxRows, bool Grouped32 = kGroupedAct32>
QuantDotTable makeTable(SimdLevel level, bool vnni, const QuantDotTable* single_row = nullptr) {
  static_assert(MaxRows <= kDotRows);
  return {level,
          vnni,
          MaxRows,
          kUnsignedAct32 ? uint8_t{128} : uint8_t{0},
          Grouped32,
          kGroupedAct256,
          quantize32<Grouped32>,
          quantize256,
          dotRows<MaxRows, ActBlock32, Signed32<Grouped32>::template Q8_0>,
          dotRows<MaxRows, ActBlock32, Signed32<Grouped32>::template Q4_0>,
          dotRows<MaxRows, ActBlock256, Q4_KKernel>,
          dotRows<MaxRows, ActBlock256, Q6_KKernel>,
          single_row,
          tileOrNull<BlockQ8_0>(),
          tileOrNull<BlockQ4_0>(),
          tileQ4_KOrNull(),
          kPrefill32,
          kPrefill256};
}
