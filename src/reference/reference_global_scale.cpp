// CPU reference global scale: amax over the tensor (or per row), NaNs ignored, then
//   kExact / kFast (encode convention):  gs  = 2688.0f / amax   (FP32 division, RN)
//                                         amax == 0          -> 1.0f
//                                         gs overflows (Inf) -> FLT_MAX  (subnormal amax < 2688/FLT_MAX)
//                                         gs == 0 (amax Inf) -> 1.0f
//   kModelOpt (decode convention):        ws2 = amax / 2688.0f (FP32 division, RN), no guards
// (docs/NUMERICS.md "Global scale").
#include <cfloat>
#include <vector>

#include "fp4kit/reference.h"
#include "format/fp32_ops.h"
#include "reference/checks.h"
#include "reference/parallel.h"
#include "reference/tensor_io.h"

namespace fp4kit::reference {

using detail::ArgCheck;

namespace {

float scale_from_amax(float amax, QuantNumerics numerics) {
  if (numerics == QuantNumerics::kModelOpt) return amax / 2688.0f;
  if (amax == 0.0f) return 1.0f;
  const float gs = 2688.0f / amax;
  if (gs > FLT_MAX) return FLT_MAX;
  if (gs == 0.0f) return 1.0f;
  return gs;
}

}  // namespace

Status compute_global_scale(const GlobalScaleParams& p) {
  ArgCheck c("reference::compute_global_scale");
  c.not_null(p.input, "input").not_null(p.out_global_scale, "out_global_scale").positive(p.rows, "rows").positive(p.cols, "cols");
  detail::check_stride(c, p.input_row_stride, p.cols, "input_row_stride");
  c.dtype_in(p.input_dtype, {DType::kBF16, DType::kFP16, DType::kFP32}, "input");
  c.require(detail::valid_numerics(p.numerics), StatusCode::kInvalidArgument,
            "numerics " + detail::enum_value(int(p.numerics)) + " is not a QuantNumerics");
  const int64_t stride = detail::resolve_stride(p.input_row_stride, p.cols);
  c.size_fits(p.rows, stride, int64_t(dtype_size(p.input_dtype)), "input");
  FP4KIT_RETURN_IF_ERROR(c.status());

  std::vector<float> row_amax(static_cast<size_t>(p.rows));
  const int64_t grain = p.cols >= 65536 ? 1 : 65536 / p.cols;
  detail::parallel_for(p.rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<float> x(static_cast<size_t>(p.cols));
    for (int64_t r = r0; r < r1; ++r) {
      detail::load_row(p.input, p.input_dtype, r * stride, p.cols, x.data());
      float amax = 0.0f;
      for (float v : x) amax = format::fmax_nan_ignoring(amax, format::abs_f(v));
      row_amax[size_t(r)] = amax;
    }
  });

  if (p.per_row) {
    for (int64_t r = 0; r < p.rows; ++r) {
      p.out_global_scale[r] = scale_from_amax(row_amax[size_t(r)], p.numerics);
      if (p.out_amax) p.out_amax[r] = row_amax[size_t(r)];
    }
  } else {
    float amax = 0.0f;
    for (float a : row_amax) amax = format::fmax_nan_ignoring(amax, a);
    p.out_global_scale[0] = scale_from_amax(amax, p.numerics);
    if (p.out_amax) p.out_amax[0] = amax;
  }
  return Status::ok();
}

}  // namespace fp4kit::reference
