// CPU reference grouped GEMM (fp4kit/grouped_gemm.h): each non-empty group through reference::gemm
// on its own rows, so the numerics are the dense reference's by construction. W4A4's A rows of a
// group are copied out with their scales into a group-local [rows, k/2] + linear scale matrix (the
// group's rows start anywhere inside the 128x4 layout over max_rows).
#include <string>
#include <vector>

#include "fp4kit/grouped_gemm.h"
#include "fp4kit/reference.h"
#include "reference/checks.h"

namespace fp4kit::reference {

using detail::ArgCheck;

Status grouped_gemm(const GroupedGemmRefParams& p) {
  ArgCheck c("reference::grouped_gemm");
  const bool a_fp4 = p.a_dtype == DType::kE2M1x2;
  c.positive(p.groups, "groups").non_negative(p.max_rows, "max_rows").non_negative(p.max_group_rows, "max_group_rows");
  c.positive(p.n, "n").positive(p.k, "k").multiple_of(p.k, 16, "k", "NVFP4 block size");
  c.require(p.groups < (int64_t(1) << 31) && p.max_rows < (int64_t(1) << 31) && p.n < (int64_t(1) << 31) &&
                p.k < (int64_t(1) << 31),
            StatusCode::kInvalidArgument, "groups, max_rows, n and k must each be < 2^31");
  c.dtype_in(p.a_dtype, {DType::kBF16, DType::kFP16, DType::kE2M1x2}, "a");
  c.dtype_in(p.d_dtype, {DType::kBF16, DType::kFP16}, "d");
  c.require(a_fp4 || p.d_dtype == p.a_dtype, StatusCode::kNotSupported,
            "W4A16 writes D in the activation dtype (a and d dtypes differ)");
  c.not_null(p.b, "b").not_null(p.b_scales, "b_scales");
  c.not_null(p.alpha, "alpha");
  if (p.max_rows > 0) c.not_null(p.a, "a").not_null(p.d, "d").not_null(p.group_offsets, "group_offsets");
  if (a_fp4 && p.max_rows > 0) c.not_null(p.a_scales, "a_scales");
  detail::check_stride(c, p.lda, p.k, "lda");
  detail::check_stride(c, p.ldd, p.n, "ldd");
  detail::check_layout(c, p.b_scale_layout, "b_scale_layout");
  const int64_t lda = detail::resolve_stride(p.lda, p.k), ldd = detail::resolve_stride(p.ldd, p.n);
  if (a_fp4) c.multiple_of(lda, 2, "lda", "two codes per byte");
  c.size_fits(p.max_rows, lda, 2, "a").size_fits(p.max_rows, ldd, 2, "d");
  if (c.ok()) c.size_fits(p.groups, p.n * (p.k / 2), 1, "b");  // n, k < 2^31 here
  ScaleShape a_shape{0, 0}, b_shape{0, 0};
  if (a_fp4) detail::check_scale_shape(c, ScaleLayout::kSwizzled128x4, p.max_rows, p.k / 16, "a_scales", &a_shape);
  detail::check_scale_shape(c, p.b_scale_layout, p.n, p.k / 16, "b_scales", &b_shape);
  if (c.ok()) c.size_fits(p.groups, b_shape.bytes(), 1, "b_scales");
  FP4KIT_RETURN_IF_ERROR(c.status());
  if (p.max_rows == 0) return Status::ok();  // nothing to do, as on the GPU

  // The offsets rule of the GPU path (its offsets kernel).
  const int64_t group_cap = p.max_group_rows > 0 ? p.max_group_rows : p.max_rows;
  const int32_t* o = p.group_offsets;
  if (o[0] != 0)
    return Status(StatusCode::kInvalidArgument,
                  "reference::grouped_gemm: group_offsets[0] (=" + std::to_string(o[0]) + ") must be 0");
  for (int64_t g = 0; g < p.groups; ++g) {
    const int64_t rows = int64_t(o[g + 1]) - o[g];
    if (rows < 0 || o[g + 1] > p.max_rows || rows > group_cap)
      return Status(StatusCode::kInvalidArgument,
                    "reference::grouped_gemm: group " + std::to_string(g) + " spans rows [" + std::to_string(o[g]) +
                        ", " + std::to_string(o[g + 1]) + "): offsets must be non-decreasing, at most max_rows (=" +
                        std::to_string(p.max_rows) + "), groups at most max_group_rows (=" +
                        std::to_string(group_cap) + ") long");
  }

  const int64_t sf_cols = p.k / 16;
  for (int64_t g = 0; g < p.groups; ++g) {
    const int64_t r0 = o[g], rows = int64_t(o[g + 1]) - r0;
    if (rows == 0) continue;
    GemmRefParams rp;
    rp.m = rows;
    rp.n = p.n;
    rp.k = p.k;
    rp.a_dtype = p.a_dtype;
    rp.b = p.b + g * p.n * (p.k / 2);
    rp.b_scales = p.b_scales + g * b_shape.bytes();
    rp.b_scale_layout = p.b_scale_layout;
    rp.alpha = p.alpha[g];
    rp.out_dtype = p.d_dtype;
    rp.d = static_cast<uint8_t*>(p.d) + r0 * ldd * 2;
    rp.ldd = ldd;
    std::vector<uint8_t> codes, scales;
    if (a_fp4) {
      const auto* a = static_cast<const uint8_t*>(p.a);
      codes.resize(size_t(rows * (p.k / 2)));
      scales.resize(size_t(rows * sf_cols));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < p.k / 2; ++j) codes[size_t(r * (p.k / 2) + j)] = a[(r0 + r) * (lda / 2) + j];
        for (int64_t b = 0; b < sf_cols; ++b)
          scales[size_t(r * sf_cols + b)] =
              p.a_scales[detail::sf_offset(ScaleLayout::kSwizzled128x4, r0 + r, b, a_shape.padded_cols)];
      }
      rp.a = codes.data();
      rp.a_scales = scales.data();
      rp.a_scale_layout = ScaleLayout::kLinear;
    } else {
      rp.a = static_cast<const uint8_t*>(p.a) + r0 * lda * 2;
      rp.lda = lda;
    }
    FP4KIT_RETURN_IF_ERROR(gemm(rp));
  }
  return Status::ok();
}

}  // namespace fp4kit::reference
