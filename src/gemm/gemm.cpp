// The public GEMM entry points: validation, tactic choice, launch.
#include "fp4kit/gemm.h"

#include "common/cuda_check.h"
#include "common/validate.h"
#include "fp4kit/device.h"
#include "fp4kit/layout.h"
#include "fp4kit/tune.h"
#include "gemm/families.h"
#include "gemm/tactics.h"

namespace fp4kit {
namespace {

// Checks that do not depend on the tactic. All sizes are validated before anything is launched.
Status validate(const GemmParams& p, const char* fn) {
  const bool w4a4 = p.a_dtype == DType::kE2M1x2;
  const int64_t lda = p.lda ? p.lda : p.k;
  const int64_t ldd = p.ldd ? p.ldd : p.n;
  detail::ArgCheck check(fn);
  check.require(p.tactic >= -1, StatusCode::kInvalidArgument,
                "tactic (=" + std::to_string(p.tactic) + ") must be -1 (automatic) or a tactic id")
      .positive(p.m, "m")
      .positive(p.n, "n")
      .positive(p.k, "k")
      .require(p.m < detail::kGemmDimLimit && p.n < detail::kGemmDimLimit && p.k < detail::kGemmDimLimit,
               StatusCode::kInvalidArgument, "m, n and k must each be < 2^31")
      .multiple_of(p.k, 16, "k", "NVFP4 block size")
      .dtype_in(p.a_dtype, {DType::kBF16, DType::kFP16, DType::kE2M1x2}, "a")
      .dtype_in(p.d_dtype, {DType::kBF16, DType::kFP16}, "d")
      .require(w4a4 || p.d_dtype == p.a_dtype, StatusCode::kNotSupported,
               "W4A16 writes D in the activation dtype (a and d dtypes differ)")
      .not_null(p.a, "a")
      .not_null(p.b_prepacked, "b_prepacked")
      .not_null(p.alpha, "alpha")
      .not_null(p.d, "d")
      .aligned(p.d, 2, "d")
      .aligned(p.bias, 2, "bias")
      .at_least(lda, p.k, "lda", "k")
      .at_least(ldd, p.n, "ldd", "n")
      .multiple_of(lda, w4a4 ? 32 : 8, "lda", "rows of A must stay 16-byte aligned")
      .aligned(p.a, 16, "a")
      .size_fits(p.m, lda, 2, "A")
      .size_fits(p.m, ldd, 2, "D")
      .buffer(p.b_prepacked_bytes, prepacked_weight_bytes(p.n, p.k), "b_prepacked")
      .aligned(p.b_prepacked, 16, "b_prepacked");
  // (W4A4: the scales are read a 32-bit word per row and chunk; decode_kernel.cuh RingA4)
  if (w4a4) check.not_null(p.a_scales, "a_scales").aligned(p.a_scales, 4, "a_scales");
  return check.status();
}

// The shape and dtype checks of `validate`, for the queries that run before the pointers are set
// (workspace size, default tactic): outside them the tactic rules' arithmetic is not defined.
bool shape_ok(const GemmParams& p) {
  return gemm_impl::gemm_dims_ok(p.m, p.n, p.k) && p.tactic >= -1 &&
         (p.a_dtype == DType::kBF16 || p.a_dtype == DType::kFP16 || p.a_dtype == DType::kE2M1x2) &&
         (p.d_dtype == DType::kBF16 || p.d_dtype == DType::kFP16);
}

const gemm_impl::Tactic* choose(const GemmParams& p) {
  if (p.tactic >= 0) return gemm_impl::find_tactic(p.tactic);
  // Tuned tactic (fp4kit/tune.h: in-memory map, loaded once) if it can run this problem, narrowed to
  // the token tile that fits M (the tuner measures the bucket's M, a power of two up to 256).
  if (const gemm_impl::Tactic* t = gemm_impl::find_tactic(tuned_gemm_tactic(p)); t && gemm_impl::can_implement(*t, p)) {
    const gemm_impl::Tactic* fit = gemm_impl::find_tactic(gemm_impl::fit_token_tile(t->id, p.m));
    return fit && gemm_impl::can_implement(*fit, p) ? fit : t;
  }
  const int sms = device_info().available ? device_info().sm_count : 132;
  const gemm_impl::Tactic* t =
      gemm_impl::find_tactic(gemm_impl::heuristic_tactic(p, sms, gemm_impl::device_hbm_rich()));
  // The model assumes a grid of every SM; where fewer 2-CTA clusters are resident the launch's grid
  // differs and a split tail may not apply: the same tile without it.
  if (t && t->split_tail && !gemm_impl::can_implement(*t, p).is_ok())
    t = gemm_impl::find_tactic(gemm_impl::without_split_tail(t->id));
  return t;
}

}  // namespace

std::vector<GemmTacticInfo> gemm_tactics() {
  std::vector<GemmTacticInfo> out;
  for (const gemm_impl::Tactic& t : gemm_impl::tactic_table()) out.push_back({t.id, t.name});
  return out;
}

Status gemm_tactic_can_implement(int id, const GemmParams& p) {
  FP4KIT_RETURN_IF_ERROR(validate(p, "gemm_tactic_can_implement"));
  const gemm_impl::Tactic* t = gemm_impl::find_tactic(id);
  if (!t) return Status(StatusCode::kInvalidArgument, "gemm: unknown tactic " + std::to_string(id));
  return gemm_impl::can_implement(*t, p);
}

int gemm_default_tactic(const GemmParams& p) {
  if (!shape_ok(p)) return -1;
  const gemm_impl::Tactic* t = choose(GemmParams{p.m, p.n, p.k, p.a_dtype, p.a, p.lda, p.a_scales, p.b_prepacked,
                                            p.b_prepacked_bytes, p.alpha, p.bias, p.d, p.d_dtype, p.ldd, -1});
  return t ? t->id : -1;
}

size_t gemm_workspace_bytes(const GemmParams& p) {
  if (!shape_ok(p)) return 0;
  const gemm_impl::Tactic* t = choose(p);
  return t ? gemm_impl::workspace_bytes(*t, p) : 0;
}

Status gemm(const GemmParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  FP4KIT_RETURN_IF_ERROR(validate(p, "gemm"));
  const gemm_impl::Tactic* t = choose(p);
  if (!t) return Status(StatusCode::kInvalidArgument, "gemm: unknown tactic " + std::to_string(p.tactic));
  FP4KIT_RETURN_IF_ERROR(gemm_impl::can_implement(*t, p));
  const size_t need = gemm_impl::workspace_bytes(*t, p);
  if (need > 0) {
    FP4KIT_RETURN_IF_ERROR(detail::ArgCheck("gemm")
                               .not_null(workspace, "workspace")
                               .workspace(workspace_bytes, size_t(need))
                               .aligned(workspace, 16, "workspace")
                               .status());
  }
  FP4KIT_RETURN_IF_ERROR(detail::require_device("gemm"));
  return gemm_impl::launch(*t, p, workspace, workspace_bytes, stream);
}

namespace gemm_impl {

Status can_implement(const Tactic& t, const GemmParams& p) {
  switch (t.family) {
    case Family::kDecode: return decode_can_implement(t, p);
    case Family::kWgmma: return wgmma_can_implement(t, p);
  }
  return Status(StatusCode::kNotSupported, "tactic " + t.name + ": family not built");
}

size_t workspace_bytes(const Tactic& t, const GemmParams& p) {
  return t.family == Family::kDecode ? decode_workspace_bytes(t, p) : wgmma_workspace_bytes(t, p);
}

Status launch(const Tactic& t, const GemmParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (t.family == Family::kDecode) return decode_launch(t, p, workspace, workspace_bytes, stream);
  if (t.family == Family::kWgmma) return wgmma_launch(t, p, workspace, workspace_bytes, stream);
  return Status(StatusCode::kNotSupported, "tactic " + t.name + ": family not built");
}

}  // namespace gemm_impl
}  // namespace fp4kit
