// fused_moe: validation, workspace and the launch sequence of the NVFP4 MoE layer (fp4kit/moe.h).
//
// Pipeline (one stream, no allocation, no host synchronization unless check_expert_ids):
//
//  a+b  Permute and gather (src/moe/permute.cu). The n = T*top_k expanded entries (t, j) are
//       counting-sorted by local expert, stably (rows of an expert in entry order), without atomics:
//         offsets[E_local+1]  exclusive prefix of the per-expert counts (int32)
//         active[], num_active  local experts with rows, ascending (what the grouped decode GEMM walks)
//         perm[n]             row of entry (t, j), -1 if its expert is not local or the id is invalid
//         row_expert[rows]    local expert of each row (per-expert FC2 activation scale)
//         header[0]           error bits: an id outside [0, E) (such entries are treated as not
//                             routed, never used as an index); an expert with more than T rows
//                             (only possible when a token repeats an expert: the grouped GEMMs are
//                             told max_group_rows = T, so that layer's output is then unspecified)
//       and A1[row] is written from input row t:
//         W4A16               the 16-bit row, copied;
//         W4A4, 16-bit input  each 16-element block quantized with fc1_act_global[e or 0] by the
//                             kExact NVFP4 recipe (format/block_recipes.h, as quantize_nvfp4) and
//                             written decoded, e2m1 * sf (exact in BF16 and FP16);
//         W4A4, NVFP4 input   e2m1 * sf from the codes and the 128x4 scales of row t.
//       n <= 4096 and E_local <= 512: ONE kernel (permute_gather_fused_kernel, 512 threads); every
//       block ranks all entries itself (deterministic, so all blocks agree), block 0 publishes the
//       metadata, and all blocks gather. Otherwise four kernels: per-chunk counts, one-block scan,
//       per-chunk ranks, gather (the id check, if on, runs before the gather); where FC1 runs the
//       256x128 tile with few n tiles and rows per expert (fc1_gathers_rows) the rank kernel writes
//       each row's token instead and FC1 reads x (W4A16) or the tokens quantized once (W4A4, one
//       activation global) in place, without A1 and the gather.
//  c    FC1: grouped GEMM (gemm/grouped.h) over the E_local groups, F1[rows, 2I] = alpha1[e] * A1 · W1_eᵀ.
//       Tactic (moe/moe_tactics.h): fc1_tactic, else the tuning cache's for (FC1, T), else the heuristic's.
//  d    SwiGLU (swiglu_finalize.cu): h = silu(gate) * up with up = F1[:, 0:I], gate = F1[:, I:2I],
//       silu(g) = g / (1 + expf(-g)), FP32, rounded to the activation dtype; W4A4: quantized with
//       fc2_act_global (kExact) and written decoded; -> A2[rows, I] (rows = offsets[E_local], read on
//       the device).
//  e    FC2: grouped GEMM, F2[rows, H] = alpha2[e] * A2 · W2_eᵀ.
//  f    Finalize: out[t] = Σ_j final_scales[t, j] * F2[perm(t, j)] in FP32 in j order from +0, the
//       product and the sum each rounded (__fmul_rn/__fadd_rn: no FMA, as the reference); entries
//       with perm -1 skipped (a token with none gets +0), rounded once; 16-byte vectors.
//  g    check_expert_ids: after the permutation the error word is copied to the host (one stream
//       synchronization) and a bad id, or an expert repeated within a token beyond T rows, returns
//       kInvalidArgument before anything else is launched or the output written. Refused while
//       the stream is capturing a graph: turn it off for graphs.
//
// At small T that is 5 kernel launches (+ the grouped decode GEMM's counter memsets). Every output
// element is a fixed-order computation and the permutation is deterministic: bit-identical runs.
// Workspace layout: src/moe/moe_workspace.h. Small batches (MoeParams::path, rule in
// src/moe/moe_path.h) skip all of this for the per-entry path: 2 kernels (src/moe/per_entry.cu), or
// replace c..f by the fused-decode kernel (src/moe/fused_decode.cu): the fused permutation, then
// one persistent kernel for FC1 + SwiGLU, FC2 and finalize.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "common/cuda_check.h"
#include "common/validate.h"
#include "fp4kit/device.h"
#include "fp4kit/gemm.h"
#include "fp4kit/moe.h"
#include "fp4kit/tune.h"
#include "gemm/grouped.h"
#include "gemm/prepacked_layout.h"
#include "gemm/tactics.h"  // RuleOverride
#include "moe/fused_decode.h"
#include "moe/moe_kernels.h"
#include "moe/moe_path.h"
#include "moe/moe_tactics.h"
#include "moe/moe_workspace.h"
#include "moe/per_entry.h"

namespace fp4kit {
namespace {

using detail::ArgCheck;
using moe_impl::MoeDims;
using moe_impl::MoeWorkspaceLayout;

std::string num(int64_t v) { return std::to_string(v); }

// FC1 reads its rows in place (GroupedGemmParams::row_token) where that pays (moe_path.h,
// fc1_row_gather_pays: few n tiles, few rows per expert) and its tactic (forced, tuned or the
// heuristic's) can: a wgmma tile of sm90::kGatherRowsBN = 256 weight rows, the only one that gathers.
bool fc1_gathers_rows(gemm_impl::GroupedGemmParams g1, const int32_t* row_token, int64_t tokens) {
  if (!moe_impl::fc1_row_gather_pays(g1.n, gemm_impl::grouped_mean_rows(g1))) return false;
  g1.tactic = g1.tactic >= 0 ? g1.tactic : gemm_impl::grouped_gemm_default_tactic(g1);
  g1.row_token = row_token;
  g1.a_rows = tokens;
  return gemm_impl::grouped_gemm_can_implement(g1).is_ok();
}

// Shapes, enums, dtypes, tactics: everything moe_workspace_bytes depends on.
void check_problem(ArgCheck& c, const MoeParams& p) {
  c.non_negative(p.num_tokens, "num_tokens")
      .non_negative(p.max_tokens, "max_tokens")
      .positive(p.hidden, "hidden")
      .multiple_of(p.hidden, 64, "hidden", "NVFP4 weight chunks of 64")
      .positive(p.inter, "inter")
      .multiple_of(p.inter, 64, "inter", "NVFP4 weight chunks of 64")
      .require(p.hidden < detail::kGemmDimLimit && p.inter < detail::kGemmDimLimit / 2, StatusCode::kInvalidArgument,
               "hidden (=" + num(p.hidden) + ") and 2 * inter (inter = " + num(p.inter) +
                   ") must each be < 2^31 (the GEMMs' limit on n and k)")
      .positive(p.num_experts, "num_experts")
      .require(p.num_experts < detail::kGemmDimLimit, StatusCode::kInvalidArgument,
               "num_experts (=" + num(p.num_experts) + ") must be < 2^31 (expert ids are int32)")
      .positive(p.top_k, "top_k")
      .require(p.top_k <= p.num_experts, StatusCode::kInvalidArgument,
               "top_k (=" + num(p.top_k) + ") must be <= num_experts (=" + num(p.num_experts) + ")")
      .positive(p.ep_size, "ep_size");
  if (!c.ok()) return;
  c.require(p.num_experts % p.ep_size == 0, StatusCode::kInvalidArgument,
            "num_experts (=" + num(p.num_experts) + ") must be a multiple of ep_size (=" + num(p.ep_size) + ")")
      .require(p.ep_rank >= 0 && p.ep_rank < p.ep_size, StatusCode::kInvalidArgument,
               "ep_rank (=" + num(p.ep_rank) + ") must be in [0, ep_size (=" + num(p.ep_size) + "))")
      .require(p.num_experts / p.ep_size <= moe_impl::kMaxLocalExperts, StatusCode::kNotSupported,
               "num_experts / ep_size (=" + num(p.num_experts / p.ep_size) + ") must be <= " +
                   num(moe_impl::kMaxLocalExperts))
      .require(p.mode == MoeMode::kW4A16 || p.mode == MoeMode::kW4A4, StatusCode::kInvalidArgument,
               "mode (=" + num(int(p.mode)) + ") is not a MoeMode")
      .dtype_in(p.act_dtype, {DType::kBF16, DType::kFP16}, "act");
  if (!c.ok()) return;
  const bool w4a4 = p.mode == MoeMode::kW4A4;
  c.require(p.input_dtype == p.act_dtype || (w4a4 && p.input_dtype == DType::kE2M1x2), StatusCode::kInvalidArgument,
            std::string("input dtype ") + dtype_name(p.input_dtype) + " must be the act dtype (" +
                dtype_name(p.act_dtype) + (w4a4 ? ") or e2m1x2 (pre-quantized input)" : ") in W4A16"))
      .require(p.max_tokens == 0 || p.num_tokens <= p.max_tokens, StatusCode::kInvalidArgument,
               "num_tokens (=" + num(p.num_tokens) + ") must be <= max_tokens (=" + num(p.max_tokens) + ")")
      .require(moe_impl::is_moe_path(p.path), StatusCode::kInvalidArgument,
               "path (=" + num(int(p.path)) + ") is not a MoePath")
      .require(p.path != MoePath::kPerEntry || moe_impl::per_entry_supported(p.num_tokens, p.top_k, p.hidden),
               StatusCode::kNotSupported,
               "path kPerEntry needs top_k <= " + num(moe_impl::kPerEntryMaxTopK) + ", hidden <= " +
                   num(moe_impl::kPerEntryMaxHidden) + " and num_tokens * top_k <= " +
                   num(moe_impl::kPerEntryMaxEntries) + " (top_k = " + num(p.top_k) + ", hidden = " +
                   num(p.hidden) + ", num_tokens = " + num(p.num_tokens) + ")")
      .require(p.path != MoePath::kFusedDecode ||
                   moe_impl::fused_decode_supported(p.num_tokens, p.top_k, p.num_experts / p.ep_size),
               StatusCode::kNotSupported,
               "path kFusedDecode needs num_tokens * top_k <= " + num(moe_impl::kFusedMaxRows) +
                   " and num_experts / ep_size <= " + num(moe_impl::kFusedMaxExperts) + " (num_tokens = " +
                   num(p.num_tokens) + ", top_k = " + num(p.top_k) + ", num_experts / ep_size = " +
                   num(p.num_experts / p.ep_size) + ")");
  if (!c.ok()) return;
  const int64_t tokens = std::max(p.num_tokens, p.max_tokens);
  int64_t rows = 0;
  c.require(detail::checked_mul(tokens, p.top_k, &rows) && rows < (int64_t(1) << 31), StatusCode::kInvalidArgument,
            "max(num_tokens, max_tokens) * top_k (=" + num(tokens) + " * " + num(p.top_k) + ") must be < 2^31")
      .size_fits(rows, std::max(p.hidden, 2 * p.inter), 4, "intermediate activations");
  const int tactics = gemm_impl::grouped_gemm_tactic_count();
  c.require(p.fc1_tactic >= -1 && p.fc1_tactic < tactics, StatusCode::kInvalidArgument,
            "fc1_tactic (=" + num(p.fc1_tactic) + ") is not a grouped GEMM tactic (-1 or 0.." + num(tactics - 1) + ")")
      .require(p.fc2_tactic >= -1 && p.fc2_tactic < tactics, StatusCode::kInvalidArgument,
               "fc2_tactic (=" + num(p.fc2_tactic) + ") is not a grouped GEMM tactic (-1 or 0.." + num(tactics - 1) +
                   ")");
}

// Weights and per-expert scalars (independent of the tokens).
void check_weights(ArgCheck& c, const MoeParams& p) {
  if (!c.ok()) return;
  const int64_t e_local = p.num_experts / p.ep_size;
  const int64_t fc1_bytes = moe_prepacked_weight_bytes(e_local, 2 * p.inter, p.hidden);
  const int64_t fc2_bytes = moe_prepacked_weight_bytes(e_local, p.hidden, p.inter);
  c.require(fc1_bytes > 0 && fc2_bytes > 0, StatusCode::kInvalidArgument, "expert weights overflow 64-bit byte counts")
      .not_null(p.fc1_weights, "fc1_weights")
      .buffer(p.fc1_weights_bytes, fc1_bytes, "fc1_weights")
      .aligned(p.fc1_weights, 16, "fc1_weights")
      .not_null(p.fc2_weights, "fc2_weights")
      .buffer(p.fc2_weights_bytes, fc2_bytes, "fc2_weights")
      .aligned(p.fc2_weights, 16, "fc2_weights")
      .not_null(p.fc1_alpha, "fc1_alpha")
      .not_null(p.fc2_alpha, "fc2_alpha")
      .aligned(p.fc1_alpha, 4, "fc1_alpha")
      .aligned(p.fc2_alpha, 4, "fc2_alpha");
  if (p.mode == MoeMode::kW4A4) {
    if (p.input_dtype != DType::kE2M1x2) c.not_null(p.fc1_act_global, "fc1_act_global").aligned(p.fc1_act_global, 4, "fc1_act_global");
    c.not_null(p.fc2_act_global, "fc2_act_global").aligned(p.fc2_act_global, 4, "fc2_act_global");
  }
}

// Per-token buffers (only when T > 0).
void check_tokens(ArgCheck& c, const MoeParams& p) {
  if (!c.ok()) return;
  c.not_null(p.input, "input");
  if (p.input_dtype == DType::kE2M1x2) c.not_null(p.input_scales, "input_scales");
  c.not_null(p.selected_experts, "selected_experts")
      .not_null(p.final_scales, "final_scales")
      .not_null(p.output, "output")
      .aligned(p.input, 16, "input")
      .aligned(p.selected_experts, 4, "selected_experts")
      .aligned(p.final_scales, 4, "final_scales")
      .aligned(p.output, 16, "output");
}

// The SM count the launches and the path rules plan for (an H100's 132 when unknown).
int sm_count_or_default() { return device_info().sm_count > 0 ? device_info().sm_count : 132; }

// The grouped GEMM regions also cover the tuned tactics of `tune` (the process-wide cache).
MoeWorkspaceLayout layout_for(const MoeParams& p, const MoeDims& d, TuneCache* tune) {
  const size_t ws1 = moe_impl::grouped_workspace_bound(moe_impl::moe_fc1_gemm(p), d.max_tokens, tune);
  const size_t ws2 = moe_impl::grouped_workspace_bound(moe_impl::moe_fc2_gemm(p), d.max_tokens, tune);
  const int sms = sm_count_or_default();
  return moe_impl::moe_workspace_layout(d, ws1, ws2, sms);
}

Status wrap(const Status& s, const char* stage) {
  if (s.is_ok()) return s;
  return Status(s.code(), std::string("fused_moe: ") + stage + ": " + s.message());
}

}  // namespace

size_t moe_workspace_bytes(const MoeParams& p) {
  ArgCheck c("moe_workspace_bytes");
  check_problem(c, p);
  if (!c.ok()) return 0;
  const MoeDims d = moe_impl::moe_dims(p);
  if (d.max_tokens == 0) return 0;
  return layout_for(p, d, default_tune_cache()).total;
}

Status fused_moe(const MoeParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  ArgCheck check("fused_moe");
  check_problem(check, p);
  check_weights(check, p);
  FP4KIT_RETURN_IF_ERROR(check.status());
  if (p.num_tokens == 0) return Status::ok();  // an empty batch: nothing to read, write or launch
  check_tokens(check, p);
  FP4KIT_RETURN_IF_ERROR(check.status());

  const MoeDims d = moe_impl::moe_dims(p);
  TuneCache* const tune = default_tune_cache();  // nullptr: tuning off (FP4KIT_TUNE_CACHE=off) or no GPU
  const MoeWorkspaceLayout l = layout_for(p, d, tune);
  check.not_null(workspace, "workspace")
      .workspace(workspace_bytes, size_t(l.total))
      .aligned(workspace, 16, "workspace");
  FP4KIT_RETURN_IF_ERROR(check.status());

  uint8_t* base = static_cast<uint8_t*>(workspace);
  const int sms = sm_count_or_default();
  const MoePath path = moe_impl::resolve_moe_path(p.path, d.tokens, d.top_k, d.hidden, d.inter, d.e_local,
                                                  p.mode == MoeMode::kW4A4, sms);
  // Small batches: the per-entry path (two kernels, no permutation; src/moe/per_entry.cu, rule in
  // src/moe/moe_path.h). It uses the header word and the act region of this layout.
  if (path == MoePath::kPerEntry)
    return moe_impl::run_per_entry(p, d, reinterpret_cast<int32_t*>(base + l.header), base + l.act, base + l.gemm_out,
                                   sms, stream);
  int32_t* header = reinterpret_cast<int32_t*>(base + l.header);
  int32_t* offsets = reinterpret_cast<int32_t*>(base + l.offsets);
  int32_t* active = reinterpret_cast<int32_t*>(base + l.active);
  int32_t* perm = reinterpret_cast<int32_t*>(base + l.perm);
  int32_t* row_expert = reinterpret_cast<int32_t*>(base + l.row_expert);
  void* act = base + l.act;
  void* gemm_out = base + l.gemm_out;

  gemm_impl::GroupedGemmParams g1;
  g1.groups = d.e_local;
  g1.max_rows = d.rows;
  g1.max_group_rows = d.tokens;
  g1.n = 2 * d.inter;
  g1.k = d.hidden;
  g1.a_dtype = p.act_dtype;
  g1.a = act;
  g1.lda = d.hidden;
  g1.offsets = offsets;
  g1.active = active;
  g1.num_active = header + 1;
  g1.b_prepacked = p.fc1_weights;
  g1.alpha = p.fc1_alpha;
  g1.d = gemm_out;
  g1.ldd = 2 * d.inter;
  // Programmatic dependent launch between the pipeline's kernels: each one waits for its predecessor
  // before reading anything, so only launch latency and prologues overlap (decode GEMMs, SwiGLU and
  // finalize; the wgmma GEMMs launch normally).
  g1.enable_pdl = true;

  gemm_impl::GroupedGemmParams g2 = g1;
  g2.n = d.hidden;
  g2.k = d.inter;
  g2.lda = d.inter;
  g2.b_prepacked = p.fc2_weights;
  g2.alpha = p.fc2_alpha;
  g2.ldd = d.hidden;
  // FC2's group list comes from the fused permutation kernel, which then triggers its dependents
  // only after publishing it (and a fence, PermuteArgs::publish_before_trigger); FC1 and SwiGLU
  // start only after that trigger, and FC2 only after theirs, so FC2 may read it and request its
  // first weights before SwiGLU has finished. Taken when FC2's K gives each warp two load groups
  // (I >= 512): H100 T = 8: Qwen3.6 -6 %, Qwen3-30B, DeepSeek-V3, fi-32, Mixtral -1.5..-2 %; with I =
  // 256 (fi-256) it lost 1.5-4 % (docs/PERF.md, session 5). The multi-kernel permutation gives no
  // such guarantee.
  g2.groups_ready = moe_impl::use_fused_permute(d.rows, d.e_local) && d.inter >= 512;
  // Forced, else tuned (only if it can run here within the reserved workspace), else -1 = heuristic.
  g1.tactic = moe_impl::choose_tactic(moe_impl::moe_fc1_gemm(p), d.tokens, tune, g1, l.gemm1_ws_bytes);
  g2.tactic = moe_impl::choose_tactic(moe_impl::moe_fc2_gemm(p), d.tokens, tune, g2, l.gemm2_ws_bytes);

  FP4KIT_RETURN_IF_ERROR(wrap(gemm_impl::grouped_gemm_can_implement(g1), "FC1"));
  FP4KIT_RETURN_IF_ERROR(wrap(gemm_impl::grouped_gemm_can_implement(g2), "FC2"));
  const size_t need1 = gemm_impl::grouped_gemm_workspace_bytes(g1);
  const size_t need2 = gemm_impl::grouped_gemm_workspace_bytes(g2);
  if (need1 > l.gemm1_ws_bytes || need2 > l.gemm2_ws_bytes)
    return Status(StatusCode::kInternal, "fused_moe: grouped GEMM workspace (" + num(int64_t(need1)) + ", " +
                                             num(int64_t(need2)) + " bytes) exceeds its bound (" +
                                             num(int64_t(l.gemm1_ws_bytes)) + ", " + num(int64_t(l.gemm2_ws_bytes)) + ")");
  FP4KIT_RETURN_IF_ERROR(detail::require_device("fused_moe"));
  if (p.check_expert_ids) FP4KIT_RETURN_IF_ERROR(detail::refuse_capture(stream, "fused_moe", detail::syncing_option("check_expert_ids")));

  moe_impl::PermuteArgs pa;
  pa.selected = p.selected_experts;
  pa.n = int(d.rows);
  pa.top_k = int(d.top_k);
  pa.num_experts = int(std::min<int64_t>(d.experts, 0x7fffffff));
  pa.e_begin = int(d.e_begin);
  pa.e_local = int(d.e_local);
  pa.perm = perm;
  pa.offsets = offsets;
  pa.active = active;
  pa.num_active = header + 1;
  pa.row_expert = row_expert;
  pa.error_flag = header;
  pa.chunk_counts = reinterpret_cast<int32_t*>(base + l.chunk_counts);
  pa.chunk_flags = reinterpret_cast<int32_t*>(base + l.chunk_flags);
  pa.publish_before_trigger = g2.groups_ready;

  moe_impl::GatherArgs ga;
  ga.mode = p.mode == MoeMode::kW4A16 ? moe_impl::GatherMode::kCopy
            : p.input_dtype == DType::kE2M1x2 ? moe_impl::GatherMode::kDecode
                                              : moe_impl::GatherMode::kQuantize;
  ga.bf16 = p.act_dtype == DType::kBF16;
  ga.input = p.input;
  ga.input_scales = p.input_scales;
  ga.hidden = d.hidden;
  ga.a1 = act;
  ga.act_global = p.fc1_act_global;
  ga.per_expert = p.act_global_per_expert;

  auto check_ids = [&]() -> Status {
    if (!p.check_expert_ids) return Status::ok();
    int32_t flag = 0;
    FP4KIT_CUDA_RETURN(cudaMemcpyAsync(&flag, header, sizeof(int32_t), cudaMemcpyDeviceToHost, stream),
                       "fused_moe: cudaMemcpyAsync");
    FP4KIT_CUDA_RETURN(cudaStreamSynchronize(stream), "fused_moe: cudaStreamSynchronize");
    if (flag & moe_impl::kBadExpertId)
      return Status(StatusCode::kInvalidArgument, "fused_moe: selected_experts holds an expert id outside [0, E) (E = " +
                                                      num(d.experts) + ")");
    if (flag & moe_impl::kGroupOverflow)
      return Status(StatusCode::kInvalidArgument,
                    "fused_moe: a token selects the same expert twice and that expert gets more than num_tokens rows "
                    "(each row of selected_experts must hold distinct experts)");
    return Status::ok();
  };

  if (path == MoePath::kFusedDecode) {
    // The permutation publishes the group list before it triggers the fused-decode kernel (which
    // reads it before its wait) and clears that kernel's counters.
    moe_impl::FusedDecodeArgs fd;
    fd.hidden = int(d.hidden);
    fd.inter = int(d.inter);
    fd.top_k = int(d.top_k);
    fd.tokens = int(d.tokens);
    fd.slots = int(std::min(d.e_local, d.rows));
    fd.a1 = act;
    fd.f2 = act;
    fd.h = gemm_out;
    fd.out = p.output;
    fd.offsets = offsets;
    fd.active = active;
    fd.num_active = header + 1;
    fd.perm = perm;
    fd.final_scales = p.final_scales;
    fd.w1 = static_cast<const uint8_t*>(p.fc1_weights);
    fd.w2 = static_cast<const uint8_t*>(p.fc2_weights);
    const gemm_impl::PrepackedShape s1 = gemm_impl::prepacked_shape(2 * d.inter, d.hidden);
    const gemm_impl::PrepackedShape s2 = gemm_impl::prepacked_shape(d.hidden, d.inter);
    fd.w1_bytes = s1.bytes();
    fd.w1_code_bytes = s1.code_bytes();
    fd.w2_bytes = s2.bytes();
    fd.w2_code_bytes = s2.code_bytes();
    fd.alpha1 = p.fc1_alpha;
    fd.alpha2 = p.fc2_alpha;
    fd.act_global2 = p.fc2_act_global;
    fd.per_expert = p.act_global_per_expert;
    fd.fc1_parts = moe_impl::fused_decode_fc1_parts(d.tokens, d.top_k, d.hidden, d.inter, d.e_local, sms);
    fd.fc2_blocks = moe_impl::fused_decode_fc2_blocks(d.inter);
    fd.partials = fd.fc1_parts > 1 ? reinterpret_cast<float*>(base + l.partials) : nullptr;
    int32_t* sync = reinterpret_cast<int32_t*>(base + l.sync);
    moe_impl::bind_fused_decode_sync(fd, sync);
    if (p.mode == MoeMode::kW4A16) {
      // FC1 reads x through the rows' tokens: the permutation (one block) gathers nothing. The
      // fused-decode kernel does not use row_expert, so its region holds the tokens.
      ga.mode = moe_impl::GatherMode::kNone;
      pa.row_token = row_expert;
      pa.row_expert = nullptr;
      fd.a1 = p.input;
      fd.row_token = row_expert;
    } else if (((ga.mode == moe_impl::GatherMode::kQuantize && !ga.per_expert) ||
                ga.mode == moe_impl::GatherMode::kDecode) &&
               d.top_k * d.inter + d.hidden <= d.top_k * std::max(2 * d.inter, d.hidden)) {
      // W4A4 with one activation global or an NVFP4 input: FC1 reads each token's row through
      // row_token too, quantized (decoded) once by the permutation's other blocks while block 0 ranks
      // (GatherArgs::token_rows), into gemm_out behind h ([T*k, I] there, then [T, H]: fits when
      // k*I + H <= k*max(2I, H)). Per entry instead, an NVFP4 input cost up to 9 % at T = 8..16
      // (H100 session 27, bench moe --fp4-input against the 16-bit input's token rows).
      ga.token_rows = true;
      ga.a1 = static_cast<uint16_t*>(gemm_out) + d.rows * d.inter;
      pa.row_token = row_expert;
      pa.row_expert = nullptr;
      fd.a1 = ga.a1;
      fd.row_token = row_expert;
    }
    pa.publish_before_trigger = true;
    // MoeParams::enable_pdl: the permutation (this path's first kernel) launches early and waits.
    // Not on the pipeline path, where it measured slower (H100 session 14: W4A4 T = 4 +2..4 %).
    pa.pdl = p.enable_pdl && !p.check_expert_ids;
    pa.clear = sync;
    pa.clear_words = int(moe_impl::fused_decode_sync_words(fd.slots, d.hidden, d.inter, fd.fc1_parts));
    FP4KIT_RETURN_IF_ERROR(moe_impl::launch_permute_gather_fused(pa, ga, sms, stream));
    FP4KIT_RETURN_IF_ERROR(check_ids());
    return moe_impl::launch_fused_decode(fd, ga.bf16, p.mode == MoeMode::kW4A4, sms, stream);
  }
  if (moe_impl::use_fused_permute(d.rows, d.e_local)) {
    FP4KIT_RETURN_IF_ERROR(moe_impl::launch_permute_gather_fused(pa, ga, sms, stream));
    FP4KIT_RETURN_IF_ERROR(check_ids());
  } else {
    // W4A4 from a 16-bit input with one activation global: each token quantized once (below).
    const bool token_quant = ga.mode == moe_impl::GatherMode::kQuantize && !ga.per_expert;
    // FC1 reads the token rows in place where it pays (moe_kernels.h, fc1_row_gather_enabled): no
    // gather. The rank kernel then writes each row's token into row_expert's region (only per-expert
    // activation globals, which keep the gather, read row_expert).
    const bool in_place = (ga.mode == moe_impl::GatherMode::kCopy || token_quant) &&
                          moe_impl::fc1_row_gather_enabled() && fc1_gathers_rows(g1, row_expert, d.tokens);
    if (in_place) {
      pa.row_token = row_expert;
      pa.row_expert = nullptr;
    }
    FP4KIT_RETURN_IF_ERROR(moe_impl::launch_permute_multi(pa, stream));
    FP4KIT_RETURN_IF_ERROR(check_ids());
    const void* tokens = p.input;
    if (token_quant) {
      // Quantize each token once: top_k times less NVFP4 work than per entry, the same values. In
      // place, into act, which FC1 reads and SwiGLU overwrites after it; else into FC1's output
      // buffer (free until FC1: T rows of H fit in its T*k rows of max(2I, H)), which the gather
      // copies. H100, W4A4 T = 4096: fi-256 2235 -> 1710 us, Qwen3.6 960 -> 851 (docs/PERF.md,
      // session 7).
      moe_impl::GatherArgs q = ga;
      q.a1 = in_place ? act : gemm_out;
      FP4KIT_RETURN_IF_ERROR(moe_impl::launch_quantize_rows(q, d.tokens, sms, stream));
      tokens = q.a1;
    }
    if (in_place) {
      g1.a = tokens;
      g1.row_token = row_expert;
      g1.a_rows = d.tokens;
    } else {
      if (token_quant) {
        ga.mode = moe_impl::GatherMode::kCopy;
        ga.input = tokens;
      }
      FP4KIT_RETURN_IF_ERROR(moe_impl::launch_gather(pa, ga, sms, stream));
    }
  }

  FP4KIT_RETURN_IF_ERROR(wrap(gemm_impl::grouped_gemm(g1, base + l.gemm1_ws, l.gemm1_ws_bytes, stream), "FC1"));

  moe_impl::SwigluArgs sa;
  sa.bf16 = ga.bf16;
  sa.quantize = p.mode == MoeMode::kW4A4;
  sa.f1 = gemm_out;
  sa.a2 = act;
  sa.inter = d.inter;
  sa.max_rows = d.rows;
  sa.total_rows = offsets + d.e_local;
  sa.row_expert = row_expert;
  sa.act_global = p.fc2_act_global;
  sa.per_expert = p.act_global_per_expert;
  sa.pdl = true;
  FP4KIT_RETURN_IF_ERROR(moe_impl::launch_swiglu(sa, sms, stream));

  FP4KIT_RETURN_IF_ERROR(wrap(gemm_impl::grouped_gemm(g2, base + l.gemm2_ws, l.gemm2_ws_bytes, stream), "FC2"));

  moe_impl::FinalizeArgs fa;
  fa.bf16 = ga.bf16;
  fa.f2 = gemm_out;
  fa.perm = perm;
  fa.scales = p.final_scales;
  fa.tokens = d.tokens;
  fa.hidden = d.hidden;
  fa.top_k = int(d.top_k);
  fa.out = p.output;
  fa.pdl = true;
  return moe_impl::launch_finalize(fa, sms, stream);
}

namespace moe_impl {
namespace {
gemm_impl::RuleOverride& fc1_row_gather_override() {
  static gemm_impl::RuleOverride o("FP4KIT_MOE_ROW_GATHER");
  return o;
}
}  // namespace

bool fc1_row_gather_enabled() { return fc1_row_gather_override().get() != 0; }
int set_fc1_row_gather_override(int forced) { return fc1_row_gather_override().set(forced); }
}  // namespace moe_impl

}  // namespace fp4kit
