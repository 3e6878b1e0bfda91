// The TDPBF16PS peak loop of bench/cpu_matmul: four independent tiles of C, each
// instruction 16 x 16 x 32 multiply-adds; built with -mamx-tile -mamx-bf16. The
// process must hold the tiles' permission (cpu::host_runs_amx asks for it).
#include <immintrin.h>

#include <cstdint>

#include "fma_peak.h"

float tdpbf16_peak_amx(int64_t iterations) {
  struct alignas(64) {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
    uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
  } config;
  alignas(64) static thread_local float tile[16 * 16] = {};
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, tile, 64);
  _tile_loadd(5, tile, 64);
  _tile_loadd(6, tile, 64);
  _tile_loadd(7, tile, 64);
  for (int64_t it = 0; it < iterations; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, tile, 64);
  _tile_release();
  return tile[0];
}
