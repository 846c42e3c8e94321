// The 64-byte tile configuration _tile_loadconfig reads (palette 1: up to 8
// tiles of up to 16 rows of up to 64 bytes), for the AMX kernels
// (kernels_amx.cc, quant_amx_kernel.cc). A plain struct: no code to be
// compiled with one file's flags and shared with the others.
#pragma once

#include <cstdint>

namespace tandem::kernels::cpu {

struct alignas(64) AmxTileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes a row of tile t
  uint8_t rows[16] = {};    // rows of tile t
};
static_assert(sizeof(AmxTileConfig) == 64);

}  // namespace tandem::kernels::cpu
