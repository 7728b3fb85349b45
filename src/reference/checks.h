// Validation pieces shared by the reference entry points (on top of common/validate.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/validate.h"
#include "fp4kit/layout.h"
#include "fp4kit/types.h"
#include "reference/scale_offset.h"

namespace fp4kit::reference::detail {

using fp4kit::detail::ArgCheck;

inline bool valid_numerics(QuantNumerics n) {
  return n == QuantNumerics::kExact || n == QuantNumerics::kFast || n == QuantNumerics::kModelOpt;
}

inline std::string enum_value(int v) { return "(=" + std::to_string(v) + ")"; }

inline ArgCheck& check_layout(ArgCheck& c, ScaleLayout l, const char* name) {
  return c.require(valid_layout(l), StatusCode::kInvalidArgument,
                   std::string(name) + " " + enum_value(int(l)) + " is not a ScaleLayout");
}

// The padded scale shape of `rows` x `sf_cols` in `layout`, or an overflow error naming `name`.
inline ArgCheck& check_scale_shape(ArgCheck& c, ScaleLayout layout, int64_t rows, int64_t sf_cols,
                                   const char* name, ScaleShape* out) {
  if (!c.ok()) return c;
  const bool fits = checked_scale_shape(layout, rows, sf_cols, out);
  return c.require(fits, StatusCode::kInvalidArgument,
                   std::string(name) + " size " + std::to_string(rows) + " x " + std::to_string(sf_cols) +
                       " scales overflows 64-bit byte counts");
}

// Row stride in elements: 0 means `cols`; otherwise it must be >= cols.
inline int64_t resolve_stride(int64_t stride, int64_t cols) { return stride == 0 ? cols : stride; }

inline ArgCheck& check_stride(ArgCheck& c, int64_t stride, int64_t cols, const char* name) {
  c.non_negative(stride, name);
  if (stride != 0) c.at_least(stride, cols, name, "cols");
  return c;
}

// Bytes spanned by `rows` rows of `cols` elements `stride` elements apart: the last row only needs
// `cols` elements. Valid after size_fits(rows, stride, elem_bytes).
inline int64_t strided_bytes(int64_t rows, int64_t cols, int64_t stride, int64_t elem_bytes) {
  return ((rows - 1) * stride + cols) * elem_bytes;
}

}  // namespace fp4kit::reference::detail
