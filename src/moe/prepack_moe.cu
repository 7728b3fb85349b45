// prepack_moe_weights: `experts` checkpoint-layout NVFP4 matrices -> consecutive prepacked buffers
// (gemm/prepacked_layout.h), in one launch and one stream synchronization (for the NaN check):
// gemm_impl::prepack_batched, which prepack_weights runs for one matrix.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "common/cuda_check.h"
#include "common/validate.h"
#include "fp4kit/gemm.h"
#include "fp4kit/layout.h"
#include "fp4kit/moe.h"
#include "gemm/prepack.h"

namespace fp4kit {

int64_t moe_prepacked_weight_bytes(int64_t experts, int64_t n, int64_t k) {
  if (experts <= 0 || n <= 0 || k <= 0) return 0;
  int64_t total = 0;
  if (!detail::checked_mul(experts, prepacked_weight_bytes(n, k), &total)) return 0;
  return total;
}

Status prepack_moe_weights(const MoeWeightPrepackParams& p, cudaStream_t stream) {
  using detail::ArgCheck;
  ArgCheck check("prepack_moe_weights");
  check.positive(p.experts, "experts")
      .positive(p.n, "n")
      .positive(p.k, "k")
      .require(p.n < detail::kGemmDimLimit && p.k < detail::kGemmDimLimit, StatusCode::kInvalidArgument,
               "n (=" + std::to_string(p.n) + ") and k (=" + std::to_string(p.k) +
                   ") must each be < 2^31 (the GEMMs' limit)")
      .multiple_of(p.k, 16, "k", "NVFP4 block size")
      .require(p.scale_layout == ScaleLayout::kLinear || p.scale_layout == ScaleLayout::kSwizzled128x4,
               p.scale_layout == ScaleLayout::kSwizzled8x4 ? StatusCode::kNotSupported : StatusCode::kInvalidArgument,
               p.scale_layout == ScaleLayout::kSwizzled8x4
                   ? "scale_layout 8x4 is an activation layout; weights use linear or 128x4"
                   : "scale_layout (=" + std::to_string(int(p.scale_layout)) + ") is not a ScaleLayout")
      .size_fits(p.n, p.k, 1, "weight");
  if (check.ok()) {
    int64_t per = 0, all = 0;
    check.require(detail::checked_mul(p.n, p.k / 2, &per) && detail::checked_mul(per, p.experts, &all) &&
                      detail::checked_mul(scale_buffer_bytes(BlockFormat::kNVFP4, p.scale_layout, p.n, p.k), p.experts,
                                          &all) &&
                      moe_prepacked_weight_bytes(p.experts, p.n, p.k) > 0,
                  StatusCode::kInvalidArgument,
                  "experts x weight size (" + std::to_string(p.experts) + " x " + std::to_string(p.n) + " x " +
                      std::to_string(p.k) + ") overflows 64-bit byte counts");
  }
  check.not_null(p.codes, "codes")
      .not_null(p.scales, "scales")
      .not_null(p.out, "out")
      .aligned(p.out, 16, "out")
      .buffer(p.out_bytes, moe_prepacked_weight_bytes(p.experts, p.n, p.k), "out");
  FP4KIT_RETURN_IF_ERROR(check.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("prepack_moe_weights"));

  const int64_t code_stride = p.n * (p.k / 2);
  const int64_t scale_stride = scale_buffer_bytes(BlockFormat::kNVFP4, p.scale_layout, p.n, p.k);
  return gemm_impl::prepack_batched(p.codes, p.scales, p.scale_layout, p.n, p.k, p.experts, code_stride, scale_stride,
                                    p.out, stream, "prepack_moe_weights");
}

}  // namespace fp4kit
