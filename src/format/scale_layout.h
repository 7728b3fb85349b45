// Scale-factor layout offsets (NVFP4_SPEC.md §3), host and device.
// (m, k) = (row, scale column); padded_cols = roundup(sf_cols, 4) for the swizzled layouts.
#pragma once

#include "format/host_device.h"

namespace fp4kit::format {

FP4KIT_HD int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// 512-byte atoms of 128 rows x 4 columns; inside an atom row m sits at (m%32)*16 + (m%128/32)*4.
FP4KIT_HD int64_t sf_offset_128x4(int64_t m, int64_t k, int64_t padded_cols) {
  return (m / 128) * (padded_cols / 4) * 512 + (k / 4) * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4 + (k % 4);
}

// 32-byte atoms of 8 rows x 4 columns, row-major inside the atom.
FP4KIT_HD int64_t sf_offset_8x4(int64_t m, int64_t k, int64_t padded_cols) {
  return (m / 8) * (padded_cols / 4) * 32 + (k / 4) * 32 + (m % 8) * 4 + (k % 4);
}

FP4KIT_HD int64_t sf_offset_linear(int64_t m, int64_t k, int64_t cols) { return m * cols + k; }

}  // namespace fp4kit::format
