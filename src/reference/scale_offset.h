// Byte offset of scale factor (m, k) in a scale buffer of any layout (NVFP4_SPEC.md §3), and the
// padded shape that goes with it. The per-layout formulas live in format/scale_layout.h (shared
// with the GPU kernels); this header only dispatches on the layout.
#pragma once

#include <cstdint>

#include "fp4kit/layout.h"
#include "fp4kit/types.h"
#include "format/scale_layout.h"

namespace fp4kit::reference::detail {

inline bool valid_layout(ScaleLayout l) {
  return l == ScaleLayout::kSwizzled128x4 || l == ScaleLayout::kSwizzled8x4 || l == ScaleLayout::kLinear;
}

// padded_cols: ScaleShape::padded_cols of the buffer (= sf_cols for kLinear).
inline int64_t sf_offset(ScaleLayout layout, int64_t m, int64_t k, int64_t padded_cols) {
  switch (layout) {
    case ScaleLayout::kSwizzled128x4: return format::sf_offset_128x4(m, k, padded_cols);
    case ScaleLayout::kSwizzled8x4: return format::sf_offset_8x4(m, k, padded_cols);
    case ScaleLayout::kLinear: break;
  }
  return format::sf_offset_linear(m, k, padded_cols);
}

// The padded shape of a rows x sf_cols scale matrix, or false if its byte count would overflow
// int64 (callers validate before allocating or indexing).
inline bool checked_scale_shape(ScaleLayout layout, int64_t rows, int64_t sf_cols, ScaleShape* out) {
  constexpr int64_t kMax = INT64_MAX;
  if (rows < 0 || sf_cols < 0 || rows > kMax - 128 || sf_cols > kMax - 4) return false;
  const ScaleShape s = scale_shape(layout, rows, sf_cols);
  if (s.padded_rows != 0 && s.padded_cols > kMax / s.padded_rows) return false;
  *out = s;
  return true;
}

}  // namespace fp4kit::reference::detail
