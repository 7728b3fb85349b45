// Scale-factor byte offsets in unsigned arithmetic (host + device). Equal to format::sf_offset_*
// for every non-negative (m, k) (tests/quant/sf_offset_test.cpp); the signed originals cost a
// sign fix-up per division in device code.
#pragma once

#include <cstdint>

#include "fp4kit/types.h"
#include "format/host_device.h"

namespace fp4kit::quant {

// padded_cols: the buffer's padded column count (sf_cols for kLinear).
FP4KIT_HD uint64_t sf_offset_u(ScaleLayout layout, uint64_t m, uint64_t k, uint64_t padded_cols) {
  if (layout == ScaleLayout::kSwizzled128x4)
    return (((m >> 7) * (padded_cols >> 2) + (k >> 2)) << 9) | ((m & 31u) << 4) | (((m >> 5) & 3u) << 2) | (k & 3u);
  if (layout == ScaleLayout::kSwizzled8x4)
    return (((m >> 3) * (padded_cols >> 2) + (k >> 2)) << 5) | ((m & 7u) << 2) | (k & 3u);
  return m * padded_cols + k;
}

}  // namespace fp4kit::quant
