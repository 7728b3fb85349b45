// CPU reference dequantization: NVFP4 / MXFP4 / MXFP8 -> BF16 / FP16 / FP32.
//   NVFP4: v = (e2m1 * e4m3_scale) [exact in FP32] * decode_global_scale [FP32 RN, if given]
//   MXFP4: v = e2m1 * 2^(sf-127) [exact unless it leaves FP32's range]; MXFP8 likewise with E4M3.
// v is then rounded once to the output dtype (RNE). UE8M0 scales decode as format::ue8m0_to_float
// (code 0 -> 0.0), except that code 0xFF (NaN) makes the whole block NaN (docs/NUMERICS.md).
#include <cmath>
#include <vector>

#include "fp4kit/layout.h"
#include "fp4kit/reference.h"
#include "format/e2m1.h"
#include "format/e4m3.h"
#include "format/fp32_ops.h"
#include "format/ue8m0.h"
#include "reference/checks.h"
#include "reference/parallel.h"
#include "reference/scale_offset.h"
#include "reference/tensor_io.h"

namespace fp4kit::reference {

using detail::ArgCheck;

Status dequantize(const DequantizeParams& p) {
  ArgCheck c("reference::dequantize");
  const bool valid_format =
      p.format == BlockFormat::kNVFP4 || p.format == BlockFormat::kMXFP4 || p.format == BlockFormat::kMXFP8;
  c.require(valid_format, StatusCode::kInvalidArgument,
            "format " + detail::enum_value(int(p.format)) + " is not a BlockFormat");
  c.not_null(p.elements, "elements")
      .not_null(p.scales, "scales")
      .not_null(p.output, "output")
      .positive(p.rows, "rows")
      .positive(p.cols, "cols");
  if (c.ok()) c.multiple_of(p.cols, block_size(p.format), "cols", "block size of the format");
  detail::check_stride(c, p.output_row_stride, p.cols, "output_row_stride");
  detail::check_stride(c, p.element_row_stride, p.cols, "element_row_stride");
  if (c.ok() && p.element_row_stride != 0)
    c.multiple_of(p.element_row_stride, block_size(p.format), "element_row_stride", "block size of the format");
  c.dtype_in(p.output_dtype, {DType::kBF16, DType::kFP16, DType::kFP32}, "output");
  detail::check_layout(c, p.scale_layout, "scale_layout");
  if (c.ok() && p.format != BlockFormat::kNVFP4) {
    c.require(p.decode_global_scale == nullptr, StatusCode::kInvalidArgument,
              std::string("decode_global_scale must be null for ") + block_format_name(p.format) +
                  " (MX formats have no global scale)");
  }
  c.require(!p.per_row_global_scale || p.decode_global_scale != nullptr, StatusCode::kInvalidArgument,
            "per_row_global_scale is set but decode_global_scale is null");
  const int64_t stride = detail::resolve_stride(p.output_row_stride, p.cols);
  const int64_t out_size = int64_t(dtype_size(p.output_dtype));
  c.size_fits(p.rows, stride, out_size, "output");
  // As the GPU path: the element rows (element_row_stride apart) and the scale buffer must have
  // 64-bit byte counts, or the row offsets below overflow.
  const int64_t element_stride = detail::resolve_stride(p.element_row_stride, p.cols);
  c.size_fits(p.rows, element_stride, 1, "elements");
  ScaleShape shape{0, 0};
  if (c.ok()) detail::check_scale_shape(c, p.scale_layout, p.rows, p.cols / block_size(p.format), "scales", &shape);
  if (c.ok()) c.buffer(p.output_bytes, detail::strided_bytes(p.rows, p.cols, stride, out_size), "output");
  FP4KIT_RETURN_IF_ERROR(c.status());

  const int bs = block_size(p.format);
  const int64_t cols = p.cols, sf_cols = cols / bs;
  const int64_t padded_cols = shape.padded_cols;
  const auto* elements = static_cast<const uint8_t*>(p.elements);
  const auto* scales = static_cast<const uint8_t*>(p.scales);
  const int64_t row_bytes = p.format == BlockFormat::kMXFP8 ? element_stride : element_stride / 2;
  const int64_t grain = cols >= 65536 ? 1 : 65536 / cols;

  detail::parallel_for(p.rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<float> v(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* e = elements + r * row_bytes;
      const float* dgs = p.decode_global_scale;
      for (int64_t b = 0; b < sf_cols; ++b) {
        const uint8_t sf = scales[detail::sf_offset(p.scale_layout, r, b, padded_cols)];
        float* vb = v.data() + b * bs;
        if (p.format == BlockFormat::kNVFP4) {
          const float scale = format::e4m3_to_float(sf);
          for (int i = 0; i < bs; ++i) {
            const uint8_t byte = e[(b * bs + i) / 2];
            const uint32_t code = (i & 1) ? format::e2m1_high(byte) : format::e2m1_low(byte);
            const float x = format::e2m1_to_float(code) * scale;  // exact: 2 x 4 significant bits
            vb[i] = dgs ? format::mul_rn(x, dgs[p.per_row_global_scale ? r : 0]) : x;
          }
        } else {
          const float scale = sf == 0xFF ? NAN : format::ue8m0_to_float(sf);
          for (int i = 0; i < bs; ++i) {
            float x;
            if (p.format == BlockFormat::kMXFP4) {
              const uint8_t byte = e[(b * bs + i) / 2];
              x = format::e2m1_to_float((i & 1) ? format::e2m1_high(byte) : format::e2m1_low(byte));
            } else {
              x = format::e4m3_to_float(e[b * bs + i]);
            }
            vb[i] = x * scale;
          }
        }
      }
      detail::store_row(p.output, p.output_dtype, r * stride, cols, v.data());
    }
  });
  return Status::ok();
}

}  // namespace fp4kit::reference
