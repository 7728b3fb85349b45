#include "fp4kit/layout.h"
#include "fp4kit/types.h"
#include "format/scale_layout.h"

namespace fp4kit {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kBF16: return "bf16";
    case DType::kFP16: return "fp16";
    case DType::kFP32: return "fp32";
    case DType::kE4M3: return "e4m3";
    case DType::kE2M1x2: return "e2m1x2";
    case DType::kUE8M0: return "ue8m0";
  }
  return "?";
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kBF16:
    case DType::kFP16: return 2;
    case DType::kFP32: return 4;
    default: return 1;
  }
}

const char* block_format_name(BlockFormat f) {
  switch (f) {
    case BlockFormat::kNVFP4: return "nvfp4";
    case BlockFormat::kMXFP4: return "mxfp4";
    case BlockFormat::kMXFP8: return "mxfp8";
  }
  return "?";
}

const char* scale_layout_name(ScaleLayout l) {
  switch (l) {
    case ScaleLayout::kSwizzled128x4: return "128x4";
    case ScaleLayout::kSwizzled8x4: return "8x4";
    case ScaleLayout::kLinear: return "linear";
  }
  return "?";
}

const char* quant_numerics_name(QuantNumerics n) {
  switch (n) {
    case QuantNumerics::kExact: return "exact";
    case QuantNumerics::kFast: return "fast";
    case QuantNumerics::kModelOpt: return "modelopt";
  }
  return "?";
}

ScaleShape scale_shape(ScaleLayout layout, int64_t rows, int64_t sf_cols) {
  using format::round_up;
  switch (layout) {
    case ScaleLayout::kSwizzled128x4: return {round_up(rows, 128), round_up(sf_cols, 4)};
    case ScaleLayout::kSwizzled8x4: return {round_up(rows, 8), round_up(sf_cols, 4)};
    case ScaleLayout::kLinear: return {rows, sf_cols};
  }
  return {0, 0};
}

int64_t scale_buffer_bytes(BlockFormat format, ScaleLayout layout, int64_t rows, int64_t cols) {
  return scale_shape(layout, rows, cols / block_size(format)).bytes();
}

int64_t element_buffer_bytes(BlockFormat format, int64_t rows, int64_t cols) {
  return format == BlockFormat::kMXFP8 ? rows * cols : rows * cols / 2;
}

}  // namespace fp4kit
