// The baseline-flag side of quant_amx.h: x laid out for the tiles.
#include "kernels/cpu/quant_amx.h"

#include <cstring>

#include "common/status.h"

namespace tandem::kernels::cpu {

AmxBlock256Activations amxBlock256Activations(const QuantDotTable& table, const ActBlock256* x, int m,
                                              int64_t blocks, std::vector<int8_t>* bytes, std::vector<float>* floats) {
  bytes->assign(static_cast<size_t>(blocks * 8 * 512), 0);
  floats->assign(static_cast<size_t>(blocks * 16 + blocks * 8 * 16), 0.0f);
  float* dx = floats->data();
  float* xs = dx + blocks * 16;
  for (int r = 0; r < m; ++r) {
    for (int64_t i = 0; i < blocks; ++i) {
      const ActBlock256& blk = x[r * blocks + i];
      dx[i * 16 + r] = blk.d;
      for (int j = 0; j < 8; ++j) {
        xs[(i * 8 + j) * 16 + r] = blk.sub_sums[j];
        // values 32 j + 4 p .. + 3 are 4 bytes together in either layout
        // (quant_dot.h, act256Value): grouped at 32 p + 4 j, else 32 j + 4 p
        for (int p = 0; p < 8; ++p) {
          const int8_t* src = blk.qs + (table.x256_grouped ? 32 * p + 4 * j : 32 * j + 4 * p);
          std::memcpy(bytes->data() + (i * 8 + j) * 512 + 64 * p + 4 * r, src, 4);
        }
      }
    }
  }
  return {m, blocks, bytes->data(), dx, xs};
}

AmxQ8_0Activations amxQ8_0Activations(const QuantDotTable& table, const ActBlock32* x, int m, int64_t blocks,
                                      std::vector<int8_t>* bytes, std::vector<float>* floats) {
  bytes->assign(static_cast<size_t>(blocks * 512), 0);
  floats->assign(static_cast<size_t>(blocks * 16), 0.0f);
  // the offset taken out of 4 bytes at once: x + 128 (mod 256) xor 0x80 is x
  TANDEM_CHECK(table.x32_offset == 0 || table.x32_offset == 128);
  const uint32_t unoffset = table.x32_offset == 128 ? 0x80808080u : 0u;
  float* dx = floats->data();
  for (int r = 0; r < m; ++r) {
    const ActBlock32* row = x + r * blocks;
    for (int64_t i = 0; i < blocks; ++i) {
      dx[i * 16 + r] = act32Scale(table, row, blocks, i);
      // values 4 p .. 4 p + 3 are 4 bytes together in either layout
      // (act32Value): a grouped run's word p of its block i % 8, else qs + 4 p
      const bool grouped = table.x32_grouped && i / 8 * 8 + 8 <= blocks;
      const char* run = reinterpret_cast<const char*>(row + i / 8 * 8);
      for (int p = 0; p < 8; ++p) {
        const char* src = grouped ? run + 32 + 32 * p + 4 * (i % 8) : reinterpret_cast<const char*>(row[i].qs) + 4 * p;
        uint32_t word;
        std::memcpy(&word, src, 4);
        word ^= unoffset;
        std::memcpy(bytes->data() + i * 512 + 64 * p + 4 * r, &word, 4);
      }
    }
  }
  return {m, blocks, bytes->data(), dx};
}

}  // namespace tandem::kernels::cpu
