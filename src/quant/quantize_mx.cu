// quantize_mx (MXFP4, MXFP8): argument validation, then the kernel chosen by quant_dispatch.h.
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "quant/quant_job.cuh"
#include "quant/quant_validate.h"

namespace fp4kit {

Status quantize_mx(const MxQuantizeParams& p, cudaStream_t stream) {
  using namespace quant;
  ArgCheck c("quantize_mx");
  c.require(p.format == BlockFormat::kMXFP4 || p.format == BlockFormat::kMXFP8, StatusCode::kInvalidArgument,
            std::string("format ") + (p.format == BlockFormat::kNVFP4 ? "nvfp4" : enum_text(int(p.format))) +
                " is not an MX format (expected mxfp4 or mxfp8; use quantize_nvfp4 for nvfp4)");
  c.not_null(p.input, "input")
      .not_null(p.out_elements, "out_elements")
      .not_null(p.out_scales, "out_scales")
      .positive(p.rows, "rows")
      .positive(p.cols, "cols")
      .multiple_of(p.cols, 32, "cols", "MX block size");
  check_stride(c, p.input_row_stride, p.cols, "input_row_stride");
  c.dtype_in(p.input_dtype, {DType::kBF16, DType::kFP16, DType::kFP32}, "input");
  c.require(p.numerics == QuantNumerics::kExact || p.numerics == QuantNumerics::kFast, StatusCode::kInvalidArgument,
            std::string("numerics ") +
                (p.numerics == QuantNumerics::kModelOpt ? "modelopt" : enum_text(int(p.numerics))) +
                " not supported for MX formats (expected exact or fast)");
  check_layout(c, p.scale_layout, "scale_layout");
  const int64_t stride = resolve_stride(p.input_row_stride, p.cols);
  const int64_t elem = c.ok() ? int64_t(dtype_size(p.input_dtype)) : 1;
  c.size_fits(p.rows, stride, elem, "input");
  ScaleShape shape{0, 0};
  check_scale_shape(c, p.scale_layout, p.rows, p.cols / 32, "out_scales", &shape);
  if (c.ok()) {
    c.buffer(p.out_elements_bytes, element_buffer_bytes(p.format, p.rows, p.cols), "out_elements")
        .buffer(p.out_scales_bytes, shape.bytes(), "out_scales");
  }
  c.aligned(p.input, elem, "input");
  if (p.scale_layout != ScaleLayout::kLinear) c.aligned(p.out_scales, 4, "out_scales");  // padding: 32-bit words
  FP4KIT_RETURN_IF_ERROR(c.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("quantize_mx"));

  const bool fp4 = p.format == BlockFormat::kMXFP4;
  QuantJob j;
  j.function = "quantize_mx";
  j.input = static_cast<const uint8_t*>(p.input);
  j.dtype = p.input_dtype;
  j.rows = p.rows;
  j.cols = p.cols;
  j.input_row_bytes = stride * elem;
  j.vec = aligned_to(p.input, 16) && j.input_row_bytes % 16 == 0 && aligned_to(p.out_elements, 16);
  j.out.elements = static_cast<uint8_t*>(p.out_elements);
  j.out.element_row_bytes = fp4 ? p.cols / 2 : p.cols;
  j.out.scales = static_cast<uint8_t*>(p.out_scales);
  j.out.sg = ScaleGeometry{p.scale_layout, p.rows, p.cols / 32, shape.padded_rows, shape.padded_cols};
  j.out.global_scale = nullptr;
  j.out.per_row_global_scale = false;
  j.pdl = p.enable_pdl;
  const bool exact = p.numerics == QuantNumerics::kExact;
  if (fp4) {
    return exact ? run_quantize<BlockFormat::kMXFP4, QuantNumerics::kExact>(j, stream)
                 : run_quantize<BlockFormat::kMXFP4, QuantNumerics::kFast>(j, stream);
  }
  return exact ? run_quantize<BlockFormat::kMXFP8, QuantNumerics::kExact>(j, stream)
               : run_quantize<BlockFormat::kMXFP8, QuantNumerics::kFast>(j, stream);
}

}  // namespace fp4kit
