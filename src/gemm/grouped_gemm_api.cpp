// The public grouped GEMM (fp4kit/grouped_gemm.h): validation, workspace plan, and the call
//   [offsets check] -> [W4A4: A decoded to 16 bits] -> internal grouped GEMM (gemm/grouped.h)
// on the caller's stream. The internal GEMM is the fused MoE's; this file only adapts its inputs.
#include "fp4kit/grouped_gemm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/cuda_check.h"
#include "common/validate.h"
#include "gemm/grouped.h"
#include "gemm/grouped_offsets.h"
#include "gemm/stage_activations.h"

namespace fp4kit {
namespace {

constexpr int64_t kMaxGroups = int64_t(1) << 30;

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

bool w4a4(const GroupedGemmParams& p) { return p.a_dtype == DType::kE2M1x2; }
int64_t group_cap(const GroupedGemmParams& p) {
  return p.max_group_rows > 0 ? std::min(p.max_group_rows, p.max_rows) : p.max_rows;
}

// Workspace regions, each a multiple of 256 bytes from the (16-byte aligned) base: the offsets
// check's words, W4A4's staged A, the grouped kernels' own (split-K partials, counters).
struct Plan {
  size_t words = 0;   // error, num_active, clean offsets [G + 1], active [G]
  size_t staged = 0;
  size_t gemm = 0;
  size_t total() const { return words + staged + gemm; }
};

// Checks that do not depend on the tactic; pointers only when there are rows.
Status validate(const GroupedGemmParams& p, const char* fn) {
  detail::ArgCheck c(fn);
  c.positive(p.groups, "groups")
      .require(p.groups < kMaxGroups, StatusCode::kInvalidArgument,
               "groups (=" + std::to_string(p.groups) + ") must be < 2^30")
      .non_negative(p.max_rows, "max_rows")
      .non_negative(p.max_group_rows, "max_group_rows")
      .positive(p.n, "n")
      .positive(p.k, "k")
      .require(p.max_rows < (int64_t(1) << 31) && p.n < (int64_t(1) << 31) && p.k < (int64_t(1) << 31),
               StatusCode::kInvalidArgument, "max_rows, n and k must each be < 2^31")
      .multiple_of(p.k, 16, "k", "NVFP4 block size")
      .dtype_in(p.a_dtype, {DType::kBF16, DType::kFP16, DType::kE2M1x2}, "a")
      .dtype_in(p.d_dtype, {DType::kBF16, DType::kFP16}, "d")
      .require(w4a4(p) || p.d_dtype == p.a_dtype, StatusCode::kNotSupported,
               "W4A16 writes D in the activation dtype (a and d dtypes differ)")
      .not_null(p.b_prepacked, "b_prepacked")
      .aligned(p.b_prepacked, 16, "b_prepacked")
      .not_null(p.alpha, "alpha")
      .aligned(p.alpha, 4, "alpha");
  if (c.ok()) {
    c.size_fits(p.groups, prepacked_weight_bytes(p.n, p.k), 1, "B");
    if (c.ok()) c.buffer(p.b_prepacked_bytes, p.groups * prepacked_weight_bytes(p.n, p.k), "b_prepacked");
  }
  if (p.tactic < -1 || p.tactic >= gemm_impl::grouped_gemm_tactic_count())
    c.require(false, StatusCode::kInvalidArgument, "unknown grouped tactic " + std::to_string(p.tactic));
  if (!c.ok() || p.max_rows == 0) return c.status();
  const int64_t lda = p.lda ? p.lda : p.k, ldd = p.ldd ? p.ldd : p.n;
  c.not_null(p.a, "a")
      .aligned(p.a, 16, "a")
      .not_null(p.group_offsets, "group_offsets")
      .aligned(p.group_offsets, 4, "group_offsets")
      .not_null(p.d, "d")
      .aligned(p.d, 2, "d")
      .at_least(lda, p.k, "lda", "k")
      .at_least(ldd, p.n, "ldd", "n")
      .multiple_of(lda, w4a4(p) ? 32 : 8, "lda", "rows of A must stay 16-byte aligned")
      .size_fits(p.max_rows, lda, 2, "A")
      .size_fits(p.max_rows, ldd, 2, "D");
  if (w4a4(p)) c.not_null(p.a_scales, "a_scales").aligned(p.a_scales, 4, "a_scales");
  return c.status();
}

// The internal problem. The workspace-derived pointers (offsets, active list, staged A) get
// `placeholder` (non-null, aligned, never dereferenced on the host) until the call sets them.
gemm_impl::GroupedGemmParams internal(const GroupedGemmParams& p, const void* placeholder) {
  gemm_impl::GroupedGemmParams q;
  q.groups = p.groups;
  q.max_rows = p.max_rows;
  q.max_group_rows = group_cap(p);
  q.n = p.n;
  q.k = p.k;
  q.a_dtype = w4a4(p) ? p.d_dtype : p.a_dtype;
  q.a = w4a4(p) ? placeholder : p.a;
  q.lda = w4a4(p) ? p.k : p.lda;
  q.offsets = static_cast<const int32_t*>(placeholder);
  q.active = static_cast<const int32_t*>(placeholder);
  q.num_active = static_cast<const int32_t*>(placeholder);
  q.b_prepacked = p.b_prepacked;
  q.alpha = p.alpha;
  q.d = p.d;
  q.ldd = p.ldd;
  q.tactic = p.tactic;
  q.enable_pdl = p.enable_pdl && !p.check_offsets;
  return q;
}

const void* placeholder() { return reinterpret_cast<const void*>(uintptr_t(256)); }

Plan plan_for(const GroupedGemmParams& p) {
  Plan l;
  l.words = align256(size_t(2 + (p.groups + 1) + p.groups) * sizeof(int32_t));
  l.staged = w4a4(p) ? align256(size_t(p.max_rows) * size_t(p.k) * 2) : 0;
  l.gemm = align256(gemm_impl::grouped_gemm_workspace_bytes(internal(p, placeholder())));
  return l;
}

}  // namespace

size_t grouped_gemm_workspace_bytes(const GroupedGemmParams& p) {
  if (!validate(p, "grouped_gemm_workspace_bytes").is_ok() || p.max_rows == 0) return 0;
  return plan_for(p).total();
}

std::vector<GemmTacticInfo> grouped_gemm_tactics() {
  std::vector<GemmTacticInfo> out;
  for (int id = 0; id < gemm_impl::grouped_gemm_tactic_count(); ++id)
    out.push_back({id, gemm_impl::grouped_gemm_tactic(id)->name});
  return out;
}

Status grouped_gemm_tactic_can_implement(int id, const GroupedGemmParams& p) {
  FP4KIT_RETURN_IF_ERROR(validate(p, "grouped_gemm_tactic_can_implement"));
  if (id < 0 || id >= gemm_impl::grouped_gemm_tactic_count())
    return Status(StatusCode::kInvalidArgument, "grouped_gemm: unknown tactic " + std::to_string(id));
  if (p.max_rows == 0) return Status::ok();
  gemm_impl::GroupedGemmParams q = internal(p, placeholder());
  q.tactic = id;
  return gemm_impl::grouped_gemm_can_implement(q);
}

int grouped_gemm_default_tactic(const GroupedGemmParams& p) {
  if (!validate(p, "grouped_gemm_default_tactic").is_ok()) return -1;
  gemm_impl::GroupedGemmParams q = internal(p, placeholder());
  q.tactic = -1;
  q.max_rows = std::max<int64_t>(q.max_rows, 1);
  return gemm_impl::grouped_gemm_default_tactic(q);
}

Status grouped_gemm(const GroupedGemmParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  const char* fn = "grouped_gemm";
  FP4KIT_RETURN_IF_ERROR(validate(p, fn));
  if (p.max_rows == 0) return Status::ok();
  FP4KIT_RETURN_IF_ERROR(gemm_impl::grouped_gemm_can_implement(internal(p, placeholder())));
  const Plan l = plan_for(p);
  FP4KIT_RETURN_IF_ERROR(detail::ArgCheck(fn)
                             .not_null(workspace, "workspace")
                             .workspace(workspace_bytes, size_t(l.total()))
                             .aligned(workspace, 16, "workspace")
                             .status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device(fn));
  if (p.check_offsets) FP4KIT_RETURN_IF_ERROR(detail::refuse_capture(stream, fn, detail::syncing_option("check_offsets")));

  auto* base = static_cast<uint8_t*>(workspace);
  auto* words = reinterpret_cast<int32_t*>(base);
  gemm_impl::GroupOffsetsArgs oa;
  oa.offsets = p.group_offsets;
  oa.groups = p.groups;
  oa.max_rows = p.max_rows;
  oa.max_group_rows = group_cap(p);
  oa.error = words;
  oa.num_active = words + 1;
  oa.clean_offsets = words + 2;
  oa.active = words + 2 + (p.groups + 1);
  const bool pdl = p.enable_pdl && !p.check_offsets;
  FP4KIT_RETURN_IF_ERROR(gemm_impl::launch_group_offsets(oa, pdl, stream));
  if (p.check_offsets) {
    int32_t error = 0;
    FP4KIT_CUDA_RETURN(cudaMemcpyAsync(&error, oa.error, sizeof(error), cudaMemcpyDeviceToHost, stream),
                       "grouped_gemm: cudaMemcpyAsync");
    FP4KIT_CUDA_RETURN(cudaStreamSynchronize(stream), "grouped_gemm: cudaStreamSynchronize");
    if (error != 0)
      return Status(StatusCode::kInvalidArgument,
                    "grouped_gemm: group_offsets[" + std::to_string(error - 1) +
                        "] breaks the rule offsets[0] = 0 <= offsets[1] <= ... <= offsets[groups] <= max_rows (=" +
                        std::to_string(p.max_rows) + ") with no group longer than max_group_rows (=" +
                        std::to_string(group_cap(p)) + "); nothing was written");
  }

  gemm_impl::GroupedGemmParams q = internal(p, placeholder());
  q.offsets = oa.clean_offsets;
  q.active = oa.active;
  q.num_active = oa.num_active;
  if (w4a4(p)) {  // decoded once, exactly, to the output's 16-bit type (as the dense W4A4 path)
    void* staged = base + l.words;
    FP4KIT_RETURN_IF_ERROR(gemm_impl::stage_nvfp4_operand(p.a, p.a_scales, p.max_rows, p.k, p.lda, p.d_dtype, staged,
                                                          int64_t(l.staged), pdl, stream));
    q.a = staged;
  }
  return gemm_impl::grouped_gemm(q, l.gemm ? base + l.words + l.staged : nullptr, l.gemm, stream);
}

}  // namespace fp4kit
