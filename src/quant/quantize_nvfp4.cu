// quantize_nvfp4: argument validation, then the kernel chosen by quant_dispatch.h.
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "quant/quant_job.cuh"
#include "quant/quant_validate.h"

namespace fp4kit {

Status quantize_nvfp4(const Nvfp4QuantizeParams& p, cudaStream_t stream) {
  using namespace quant;
  ArgCheck c("quantize_nvfp4");
  c.not_null(p.input, "input")
      .not_null(p.global_scale, "global_scale")
      .not_null(p.out_codes, "out_codes")
      .not_null(p.out_scales, "out_scales")
      .positive(p.rows, "rows")
      .positive(p.cols, "cols")
      .multiple_of(p.cols, 16, "cols", "NVFP4 block size");
  check_stride(c, p.input_row_stride, p.cols, "input_row_stride");
  c.dtype_in(p.input_dtype, {DType::kBF16, DType::kFP16, DType::kFP32}, "input");
  c.require(valid_numerics(p.numerics), StatusCode::kInvalidArgument,
            "numerics " + enum_text(int(p.numerics)) + " is not a QuantNumerics");
  check_layout(c, p.scale_layout, "scale_layout");
  const int64_t stride = resolve_stride(p.input_row_stride, p.cols);
  const int64_t elem = c.ok() ? int64_t(dtype_size(p.input_dtype)) : 1;
  c.size_fits(p.rows, stride, elem, "input");
  ScaleShape shape{0, 0};
  check_scale_shape(c, p.scale_layout, p.rows, p.cols / 16, "out_scales", &shape);
  if (c.ok()) {
    c.buffer(p.out_codes_bytes, element_buffer_bytes(BlockFormat::kNVFP4, p.rows, p.cols), "out_codes")
        .buffer(p.out_scales_bytes, shape.bytes(), "out_scales");
  }
  c.aligned(p.input, elem, "input").aligned(p.global_scale, 4, "global_scale");
  // Scale pairs are stored as 16-bit words, a swizzled buffer's padding as 32-bit words.
  c.aligned(p.out_scales, p.scale_layout == ScaleLayout::kLinear ? 2 : 4, "out_scales");
  FP4KIT_RETURN_IF_ERROR(c.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("quantize_nvfp4"));

  QuantJob j;
  j.function = "quantize_nvfp4";
  j.input = static_cast<const uint8_t*>(p.input);
  j.dtype = p.input_dtype;
  j.rows = p.rows;
  j.cols = p.cols;
  j.input_row_bytes = stride * elem;
  j.vec = aligned_to(p.input, 16) && j.input_row_bytes % 16 == 0 && aligned_to(p.out_codes, 16);
  j.out.elements = static_cast<uint8_t*>(p.out_codes);
  j.out.element_row_bytes = p.cols / 2;
  j.out.scales = static_cast<uint8_t*>(p.out_scales);
  j.out.sg = ScaleGeometry{p.scale_layout, p.rows, p.cols / 16, shape.padded_rows, shape.padded_cols};
  j.out.global_scale = p.global_scale;
  j.out.per_row_global_scale = p.per_row_global_scale;
  j.pdl = p.enable_pdl;
  switch (p.numerics) {
    case QuantNumerics::kExact: return run_quantize<BlockFormat::kNVFP4, QuantNumerics::kExact>(j, stream);
    case QuantNumerics::kFast: return run_quantize<BlockFormat::kNVFP4, QuantNumerics::kFast>(j, stream);
    case QuantNumerics::kModelOpt: return run_quantize<BlockFormat::kNVFP4, QuantNumerics::kModelOpt>(j, stream);
  }
  return Status(StatusCode::kInternal, "quantize_nvfp4: unexpected numerics");
}

}  // namespace fp4kit
