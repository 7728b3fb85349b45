// Argument checks of the GPU quantization entry points (host only). They mirror the CPU
// reference's rules (same messages' shape, same codes) and add the GPU's alignment rules. All of
// them run before any CUDA call, so invalid calls fail the same way with and without a GPU.
#pragma once

#include <cstdint>
#include <string>

#include "common/validate.h"
#include "fp4kit/layout.h"
#include "fp4kit/types.h"

namespace fp4kit::quant {

using detail::ArgCheck;

inline bool valid_layout(ScaleLayout l) {
  return l == ScaleLayout::kSwizzled128x4 || l == ScaleLayout::kSwizzled8x4 || l == ScaleLayout::kLinear;
}
inline bool valid_numerics(QuantNumerics n) {
  return n == QuantNumerics::kExact || n == QuantNumerics::kFast || n == QuantNumerics::kModelOpt;
}
inline std::string enum_text(int v) { return "(=" + std::to_string(v) + ")"; }

inline ArgCheck& check_layout(ArgCheck& c, ScaleLayout l, const char* name) {
  return c.require(valid_layout(l), StatusCode::kInvalidArgument,
                   std::string(name) + " " + enum_text(int(l)) + " is not a ScaleLayout");
}

// 0 means cols; otherwise >= cols.
inline int64_t resolve_stride(int64_t stride, int64_t cols) { return stride == 0 ? cols : stride; }
inline ArgCheck& check_stride(ArgCheck& c, int64_t stride, int64_t cols, const char* name) {
  c.non_negative(stride, name);
  if (stride != 0) c.at_least(stride, cols, name, "cols");
  return c;
}

// Padded scale shape, or an overflow error.
inline ArgCheck& check_scale_shape(ArgCheck& c, ScaleLayout layout, int64_t rows, int64_t sf_cols, const char* name,
                                   ScaleShape* out) {
  if (!c.ok()) return c;
  constexpr int64_t kMax = INT64_MAX;
  bool fits = rows >= 0 && sf_cols >= 0 && rows <= kMax - 128 && sf_cols <= kMax - 4;
  if (fits) {
    const ScaleShape s = scale_shape(layout, rows, sf_cols);
    fits = s.padded_rows == 0 || s.padded_cols <= kMax / s.padded_rows;
    if (fits) *out = s;
  }
  return c.require(fits, StatusCode::kInvalidArgument,
                   std::string(name) + " size " + std::to_string(rows) + " x " + std::to_string(sf_cols) +
                       " scales overflows 64-bit byte counts");
}

inline bool aligned_to(const void* p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % uintptr_t(bytes) == 0; }

}  // namespace fp4kit::quant
