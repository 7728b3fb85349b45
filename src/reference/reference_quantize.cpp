// CPU reference quantizers: NVFP4 (E2M1 + E4M3 block-16 scales + FP32 global scale) and the MX
// formats (MXFP4, MXFP8: block-32 UE8M0 scales). The per-block arithmetic is format/block_recipes.h,
// shared with the GPU kernels; this file walks rows and blocks, takes the block amax and stores
// codes and scales (docs/NUMERICS.md).
#include <cstring>
#include <vector>

#include "fp4kit/layout.h"
#include "fp4kit/reference.h"
#include "format/block_recipes.h"
#include "format/fp32_ops.h"
#include "reference/checks.h"
#include "reference/parallel.h"
#include "reference/scale_offset.h"
#include "reference/tensor_io.h"

namespace fp4kit::reference {

using detail::ArgCheck;

namespace {

// amax of n values, NaNs ignored (fmaxf semantics), starting from +0.
float block_amax(const float* x, int n) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = format::fmax_nan_ignoring(amax, format::abs_f(x[i]));
  return amax;
}

// Rows per parallel chunk: about 64K elements.
int64_t row_grain(int64_t cols) { return cols >= 65536 ? 1 : 65536 / cols; }

}  // namespace

Status quantize_nvfp4(const Nvfp4QuantizeParams& p) {
  ArgCheck c("reference::quantize_nvfp4");
  c.not_null(p.input, "input")
      .not_null(p.global_scale, "global_scale")
      .not_null(p.out_codes, "out_codes")
      .not_null(p.out_scales, "out_scales")
      .positive(p.rows, "rows")
      .positive(p.cols, "cols")
      .multiple_of(p.cols, 16, "cols", "NVFP4 block size");
  detail::check_stride(c, p.input_row_stride, p.cols, "input_row_stride");
  c.dtype_in(p.input_dtype, {DType::kBF16, DType::kFP16, DType::kFP32}, "input");
  c.require(detail::valid_numerics(p.numerics), StatusCode::kInvalidArgument,
            "numerics " + detail::enum_value(int(p.numerics)) + " is not a QuantNumerics");
  detail::check_layout(c, p.scale_layout, "scale_layout");
  const int64_t stride = detail::resolve_stride(p.input_row_stride, p.cols);
  c.size_fits(p.rows, stride, int64_t(dtype_size(p.input_dtype)), "input");
  ScaleShape shape{0, 0};
  detail::check_scale_shape(c, p.scale_layout, p.rows, p.cols / 16, "out_scales", &shape);
  if (c.ok()) {
    c.buffer(p.out_codes_bytes, element_buffer_bytes(BlockFormat::kNVFP4, p.rows, p.cols), "out_codes")
        .buffer(p.out_scales_bytes, shape.bytes(), "out_scales");
  }
  FP4KIT_RETURN_IF_ERROR(c.status());

  const int64_t cols = p.cols, sf_cols = cols / 16;
  auto* codes = static_cast<uint8_t*>(p.out_codes);
  auto* scales = static_cast<uint8_t*>(p.out_scales);
  std::memset(scales, 0, size_t(shape.bytes()));  // padding rows and columns stay 0

  detail::parallel_for(p.rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    std::vector<float> x(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      detail::load_row(p.input, p.input_dtype, r * stride, cols, x.data());
      const float S = p.global_scale[p.per_row_global_scale ? r : 0];
      uint8_t* row_codes = codes + r * (cols / 2);
      for (int64_t b = 0; b < sf_cols; ++b) {
        const float* xb = x.data() + b * 16;
        const format::BlockScale bs = format::nvfp4_block_scale(block_amax(xb, 16), S, p.numerics);
        scales[detail::sf_offset(p.scale_layout, r, b, shape.padded_cols)] = bs.sf;
        for (int j = 0; j < 8; ++j) {
          row_codes[b * 8 + j] = format::pack_e2m1x2(format::nvfp4_encode_element(xb[2 * j], bs, p.numerics),
                                                     format::nvfp4_encode_element(xb[2 * j + 1], bs, p.numerics));
        }
      }
    }
  });
  return Status::ok();
}

Status quantize_mx(const MxQuantizeParams& p) {
  ArgCheck c("reference::quantize_mx");
  c.require(p.format == BlockFormat::kMXFP4 || p.format == BlockFormat::kMXFP8, StatusCode::kInvalidArgument,
            std::string("format ") + (p.format == BlockFormat::kNVFP4 ? "nvfp4" : detail::enum_value(int(p.format))) +
                " is not an MX format (expected mxfp4 or mxfp8; use quantize_nvfp4 for nvfp4)");
  c.not_null(p.input, "input")
      .not_null(p.out_elements, "out_elements")
      .not_null(p.out_scales, "out_scales")
      .positive(p.rows, "rows")
      .positive(p.cols, "cols")
      .multiple_of(p.cols, 32, "cols", "MX block size");
  detail::check_stride(c, p.input_row_stride, p.cols, "input_row_stride");
  c.dtype_in(p.input_dtype, {DType::kBF16, DType::kFP16, DType::kFP32}, "input");
  c.require(p.numerics == QuantNumerics::kExact || p.numerics == QuantNumerics::kFast, StatusCode::kInvalidArgument,
            std::string("numerics ") +
                (p.numerics == QuantNumerics::kModelOpt ? "modelopt" : detail::enum_value(int(p.numerics))) +
                " not supported for MX formats (expected exact or fast)");
  detail::check_layout(c, p.scale_layout, "scale_layout");
  const int64_t stride = detail::resolve_stride(p.input_row_stride, p.cols);
  c.size_fits(p.rows, stride, int64_t(dtype_size(p.input_dtype)), "input");
  ScaleShape shape{0, 0};
  detail::check_scale_shape(c, p.scale_layout, p.rows, p.cols / 32, "out_scales", &shape);
  if (c.ok()) {
    c.buffer(p.out_elements_bytes, element_buffer_bytes(p.format, p.rows, p.cols), "out_elements")
        .buffer(p.out_scales_bytes, shape.bytes(), "out_scales");
  }
  FP4KIT_RETURN_IF_ERROR(c.status());

  const bool fp4 = p.format == BlockFormat::kMXFP4;
  const int64_t cols = p.cols, sf_cols = cols / 32;
  const int64_t row_bytes = fp4 ? cols / 2 : cols;
  auto* elements = static_cast<uint8_t*>(p.out_elements);
  auto* scales = static_cast<uint8_t*>(p.out_scales);
  std::memset(scales, 0, size_t(shape.bytes()));

  detail::parallel_for(p.rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    std::vector<float> x(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      detail::load_row(p.input, p.input_dtype, r * stride, cols, x.data());
      uint8_t* out = elements + r * row_bytes;
      for (int64_t b = 0; b < sf_cols; ++b) {
        const float* xb = x.data() + b * 32;
        const float amax = block_amax(xb, 32);
        if (fp4) {
          const format::BlockScale bs = format::mxfp4_block_scale(amax, p.numerics);
          scales[detail::sf_offset(p.scale_layout, r, b, shape.padded_cols)] = bs.sf;
          for (int j = 0; j < 16; ++j) {
            out[b * 16 + j] = format::pack_e2m1x2(format::mxfp4_encode_element(xb[2 * j], bs, p.numerics),
                                                  format::mxfp4_encode_element(xb[2 * j + 1], bs, p.numerics));
          }
        } else {
          const format::BlockScale bs = format::mxfp8_block_scale(amax, p.numerics);
          scales[detail::sf_offset(p.scale_layout, r, b, shape.padded_cols)] = bs.sf;
          for (int j = 0; j < 32; ++j) out[b * 32 + j] = format::mxfp8_encode_element(xb[j], bs, p.numerics);
        }
      }
    }
  });
  return Status::ok();
}

}  // namespace fp4kit::reference
