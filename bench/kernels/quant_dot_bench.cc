// Measures the quantized dot kernels of one table (kernels/cpu/quant_dot.h)
// in isolation, one thread, the weights resident in L2: the cost of one
// activation row against 256 weight values (ns), for q8_0, q4_k and q6_k,
// with `--rows` activation rows dotted per weight row in calls of the
// table's `rows`. Best of --reps sweeps over --weights weight rows. The
// integer products' roof is 8 VPDPBUSD (or maddubs + madd) steps per row and
// 256 values, so this separates the dots' issue cost from the rest of a
// decode step (model_runner_bench). A `roof` line times those instructions
// back to back (int8_roof.h) for the dots' fraction of the physical rate.
//
//   quant_dot_bench [--simd avx512|avx2|scalar] [--k 768] [--rows 16] [--weights 128] [--reps 200]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/kernels/int8_roof.h"
#include "common/quant_blocks.h"
#include "common/quantize.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_amx.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/simd_level.h"

namespace tandem::kernels::cpu {
namespace {

int run(int argc, char** argv) {
  int64_t k = 768, weights = 128;
  int rows = 16, reps = 200;
  SimdLevel level = detectSimdLevel();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--k") k = std::stoll(value);
    else if (flag == "--rows") rows = std::stoi(value);
    else if (flag == "--weights") weights = std::stoll(value);
    else if (flag == "--reps") reps = std::stoi(value);
    else if (flag == "--simd") {
      auto l = parseSimdLevel(value);
      if (!l.ok() || *l > detectSimdLevel()) {
        std::fprintf(stderr, "error: simd level %s not available\n", value.c_str());
        return 1;
      }
      level = *l;
    }
  }
  if (k % 256 != 0 || rows < 1 || weights < 1 || reps < 1) {
    std::fprintf(stderr, "error: --k must be a multiple of 256, the counts positive\n");
    return 1;
  }
  const QuantDotTable& t = quantDotsFor(level);
  std::printf("simd %s table rows %d vnni %d k %lld activation rows %d\n",
              std::string(simdLevelName(level)).c_str(), t.rows, t.vnni ? 1 : 0, static_cast<long long>(k), rows);
  // the roofs a table's dots are a fraction of: the AVX2 table's VPDPBUSD
  // (AVX-VNNI) or maddubs, the AVX-512 table's EVEX VPDPBUSD on 256 bits
  std::printf("roof  VPDPBUSD ymm %.1f, VPDPBUSD zmm %.1f, maddubs+add ymm %.1f GMAC/s (one thread, 0: not here)\n",
              bench::roofVpdpbusdYmm(3), bench::roofVpdpbusdZmm(3), bench::roofMaddubsYmm(3));
  std::mt19937 gen(1);
  std::normal_distribution<float> normal;
  std::vector<float> w(weights * k), x(rows * k);
  for (float& v : w) v = normal(gen);
  for (float& v : x) v = normal(gen);
  // from a cache line, as quantMatmul's buffer (a grouped run's 256-bit
  // loads then never straddle one)
  struct alignas(64) Line {
    char bytes[64];
  };
  std::vector<Line> x32_lines((rows * k / 32 * sizeof(ActBlock32) + 63) / 64);
  const std::span<ActBlock32> x32(reinterpret_cast<ActBlock32*>(x32_lines.data()), rows * k / 32);
  std::vector<ActBlock256> x256(rows * k / 256);
  for (int r = 0; r < rows; ++r) {
    t.quantize32(x.data() + r * k, x32.data() + r * (k / 32), k);
    t.quantize256(x.data() + r * k, x256.data() + r * (k / 256), k);
  }
  for (DType dt : {DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    const size_t row_bytes = quant::blockBytes(dt) * (k / quant::blockValues(dt));
    std::vector<char> wq(row_bytes * weights);
    for (int64_t j = 0; j < weights; ++j) quant::quantizeRow(dt, w.data() + j * k, wq.data() + j * row_bytes, k);
    float out[kDotRows];
    float sink = 0.0f;
    double best = 1e30;
    for (int rep = 0; rep < reps; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t j = 0; j < weights; ++j) {
        const void* wr = wq.data() + j * row_bytes;
        for (int r0 = 0; r0 < rows; r0 += t.rows) {
          const int n = std::min(t.rows, rows - r0);
          switch (dt) {
            case DType::kQ8_0: t.dotQ8_0(wr, x32.data() + r0 * (k / 32), k / 32, n, k, out); break;
            case DType::kQ4_K: t.dotQ4_K(wr, x256.data() + r0 * (k / 256), k / 256, n, k, out); break;
            default: t.dotQ6_K(wr, x256.data() + r0 * (k / 256), k / 256, n, k, out); break;
          }
          sink += out[0];
        }
      }
      best = std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
    }
    const double units = static_cast<double>(weights) * rows * (k / 256);
    std::printf("%-5s %.3f ns per row x 256 values, %.1f GMAC/s (checksum %g)\n", std::string(dtypeName(dt)).c_str(),
                best / units, units * 256 / best, sink);
    // the AMX-INT8 kernel of this weight (quant_amx.h), where it runs: all
    // --weights rows in one call, as quantMatmul's batches take it
    if (level == SimdLevel::kAvx512 && amxInt8Usable() && rows <= 16) {
      std::vector<int8_t> tile_bytes;
      std::vector<float> tile_floats, y(rows * weights);
      const MatmulArgs args{nullptr, wq.data(), dt, nullptr, y.data(), rows, weights, k};
      const AmxBlock256Activations q4k =
          dt != DType::kQ8_0 ? amxBlock256Activations(t, x256.data(), rows, k / 256, &tile_bytes, &tile_floats)
                             : AmxBlock256Activations{};
      const AmxQ8_0Activations q8 =
          dt == DType::kQ8_0 ? amxQ8_0Activations(t, x32.data(), rows, k / 32, &tile_bytes, &tile_floats)
                             : AmxQ8_0Activations{};
      best = 1e30;
      for (int rep = 0; rep < reps; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        if (dt == DType::kQ4_K) amxQ4KRows(args, q4k, 0, weights);
        else if (dt == DType::kQ6_K) amxQ6KRows(args, q4k, 0, weights);
        else amxQ8_0Rows(args, q8, 0, weights);
        best = std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
      }
      std::printf("%-5s %.3f ns per row x 256 values, %.1f GMAC/s on AMX-INT8 tiles (checksum %g)\n",
                  std::string(dtypeName(dt)).c_str(), best / units, units * 256 / best, y[0]);
    }
    // the same dots as tiles of kTileWeights weight rows, where the table has them
    const DotTileFn<ActBlock32> tile = dt == DType::kQ8_0 ? t.tileQ8_0 : nullptr;
    const DotTileFn<ActBlock256> tile256 = dt == DType::kQ4_K ? t.tileQ4_K : nullptr;
    if ((tile == nullptr && tile256 == nullptr) || rows > kTileRows) continue;
    float tile_out[kTileWeights * kTileRows];
    sink = 0.0f;
    best = 1e30;
    for (int rep = 0; rep < reps; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t j = 0; j < weights; j += kTileWeights) {
        const int nw = static_cast<int>(std::min<int64_t>(kTileWeights, weights - j));
        const void* wr[kTileWeights];
        for (int c = 0; c < nw; ++c) wr[c] = wq.data() + (j + c) * row_bytes;
        if (tile != nullptr) {
          tile(wr, nw, x32.data(), k / 32, rows, k, tile_out, kTileRows);
        } else {
          tile256(wr, nw, x256.data(), k / 256, rows, k, tile_out, kTileRows);
        }
        sink += tile_out[0];
      }
      best = std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("%-5s %.3f ns per row x 256 values, %.1f GMAC/s as tiles of %d weight rows (checksum %g)\n",
                std::string(dtypeName(dt)).c_str(), best / units, units * 256 / best, kTileWeights, sink);
  }
  return 0;
}

}  // namespace
}  // namespace tandem::kernels::cpu

int main(int argc, char** argv) { return tandem::kernels::cpu::run(argc, argv); }
