// Host side of the decode family: persistent grid size, fix-up workspace, launch.
#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/cuda_check.h"
#include "common/launch_kernel.h"
#include "fp4kit/device.h"
#include "gemm/arrange_activations.h"
#include "gemm/families.h"
#include "gemm/fragment_activations.h"
#include "gemm/stage_activations.h"
#include "gemm/prepacked_layout.h"
#include "gemm/tactics.h"
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl {
namespace {

// W4A4 on a dense row-major dp tile with 1..2 tokens and K <= 16384 (at most 64 KB): bytes of shared
// memory each CTA takes to decode A itself (decode_dp_kernel's kStageA: each warp decodes its own K
// slice, stage_a_slice); else 0, and a staging kernel decodes A into the workspace first.
// H100 session 27 (graph replay with PDL, medians of 3, against the CTA-wide float decode of K <= 4096
// with the staging kernel beyond): o M = 1 / 2 -4.9 / -14.9 %, qkv -4.7 / -11.3 %, gate_up -1.4 / -4.1 %,
// 8192x8192 -4.7 / -2.8 %, down -0 / -3.0 %; 8192x28672 M = 1 (K = 28672, 57 KB) +1.9 %, so K past
// 16384 keeps the staging kernel. (Session 15's CTA-wide float decode of all of A lost 7..38 % past
// K = 4096: the per-warp slices and the 8-code decode are what moved the limit.)
// (Past 48 KB the launch raises the kernel's dynamic shared memory attribute.)
// Row stride of A in shared memory (elements): whole chunks plus 8 elements, so that the rows a
// warp's lanes read at once start 16 bytes (4 banks) apart instead of on the same banks.
int64_t stage_a_row(const GemmParams& p) { return prepacked_shape(p.n, p.k).k_pad + 8; }
sm90::DecodeKernelFn stage_kernel_for(const Tactic& t, const GemmParams& p) {
  if (p.a_dtype != DType::kE2M1x2 || t.family != Family::kDecode || !t.dp || t.frag_a) return nullptr;
  if (operand_type(p) == DType::kBF16) return sm90::decode_dp_stage_kernel_for<__nv_bfloat16>(t.nt, t.rows, t.unroll, t.roll);
  return sm90::decode_dp_stage_kernel_for<__half>(t.nt, t.rows, t.unroll, t.roll);
}
size_t stage_a_smem_bytes(const Tactic& t, const GemmParams& p) {
  if (p.m > 2 || p.k > 16384 || !stage_kernel_for(t, p)) return 0;
  const size_t bytes = size_t(p.m) * size_t(stage_a_row(p)) * 2;
  return bytes <= 64 * 1024 ? bytes : 0;  // two CTAs of the 16-row tile and their static arrays per SM
}

int sm_count() { return device_info().available ? device_info().sm_count : 132; }

// W4A16 on the fragment-order tiles: the kernel reads row-major A through per-warp shared-memory rings
// (decode_dp_kernel's kRingA) instead of waiting for arrange_activations (W4A4 arranges, except on the
// tile of the NVFP4 ring below). The API's alignment (A 16-byte aligned, lda % 8 == 0) is what the ring's
// 16-byte cp.async copies need. Where fewer than 8 warps split a row block, the warps of a CTA that
// share a K slice each copy the same A chunks into their own rings (the arranged A is read once
// through L1): the ring is taken while that repeats a chunk at most twice per 16-row weight tile
// (warps per row block x row tiles >= 4: kw = 8; kw = 4; kw = 2 on the 32-row tiles).
// H100, graph replay with PDL, ring vs arrangement: session 17 (docs/PERF.md), kw = 8 layers 1-20 %
// faster at 5..16 tokens (8192x28672 M = 8 / 16 48.5 / 53.1 -> 46.2 / 52.0 us, 8192x8192 M = 16 18.4 ->
// 17.3, o M = 16 8.2 -> 6.5); with that session's ring 8192x8192's 16-row 8-token tile (kw = 4) lost
// 4-6 % and gate_up (kw = 2) moved by -2..+3 %, so the ring stayed at kw = 8. Session 26 (runs 1-2,
// medians of 2-3), with the cheaper ring of session 18: gate_up (kw = 2, 32-row tiles) M = 6 / 8
// 24.42 / 24.52 -> 24.17 / 24.27, M = 9 / 12 / 16 26.28 / 26.42 / 26.49 -> 25.36 / 25.49 / 25.66;
// 14336x4096 M = 12 / 16 (kw = 4, 32 rows) 15.79 / 15.73 -> 14.53 / 14.55; 8192x8192's 16-row tiles
// forced (kw = 4) 8 tokens M = 6 / 8 -3.5 %, 16 tokens M = 6..16 -2..-12 %; but 14336x4096 M = 6 / 8
// on the 16-row tile with kw = 2 (each chunk copied 4 times per row tile) 13.50 -> 14.10 / 13.87.
// W4A4 (w4a4_ring_enabled, BF16 output): the NVFP4 ring (RingA4) on the tile it is instantiated for
// (the rolling 8-token 32-row tile; decode_launch.cuh), with 8 warps per row block only: with 2, its
// per-warp decode of A repeats 4 times per CTA (session 26 run 1, gate_up M = 3..8 +10..+16 % against
// the arrangement).
sm90::DecodeKernelFn w4a4_ring_kernel(const Tactic& t, const GemmParams& p) {
  if (p.a_dtype != DType::kE2M1x2 || p.d_dtype != DType::kBF16 || !w4a4_ring_enabled(device_hbm_rich())) return nullptr;
  return sm90::decode_dpf_w4a4_ring_kernel_for<__nv_bfloat16>(t.nt, t.rows, t.unroll, t.roll);
}
// FP4KIT_RING_MIN_KW=2|4|8: W4A16 takes the rings only from that many warps per row block on (8: the
// rule before session 26), for A/B runs; the default asks only for warps x row tiles >= 4.
int w4a16_ring_min_kw() {
  static const int v = std::max(env_digit("FP4KIT_RING_MIN_KW", "248"), 1);
  return v;
}
bool ring_a(const Tactic& t, const GemmParams& p) {
  const bool w4a4 = p.a_dtype == DType::kE2M1x2;
  if (!t.frag_a || (w4a4 && !w4a4_ring_kernel(t, p))) return false;
  const int64_t row_blocks = (p.n + 16 * t.rows - 1) / (16 * t.rows);
  const int64_t kw = dense_dp_warps_per_row_block(row_blocks, prepacked_shape(p.n, p.k).k_chunks, sm_count());
  return w4a4 ? kw == 8 : kw * t.rows >= 4 && kw >= w4a16_ring_min_kw();
}
// Dynamic shared memory of a kRingA launch (NT = 1 / 2 / 3 / 4: 32 / 64 / 96 / 128 KB).
size_t ring_a_smem_bytes(const Tactic& t) { return size_t(sm90::kDecodeWarps) * sm90::kRingSlots * t.nt * sm90::kRingTileBytes; }

sm90::DecodeKernelFn kernel_for(const Tactic& t, const GemmParams& p) {
  if (stage_a_smem_bytes(t, p) > 0) return stage_kernel_for(t, p);
  if (t.frag_a) {
    const bool ring = ring_a(t, p);
    if (ring && p.a_dtype == DType::kE2M1x2) return w4a4_ring_kernel(t, p);
    if (operand_type(p) == DType::kBF16)
      return sm90::decode_dpf_kernel_for<__nv_bfloat16, __nv_bfloat16>(t.nt, t.rows, t.unroll, t.roll, ring);
    return sm90::decode_dpf_kernel_for<__half, __half>(t.nt, t.rows, t.unroll, t.roll, ring);
  }
  if (t.dp) {
    if (operand_type(p) == DType::kBF16)
      return sm90::decode_dp_kernel_for<__nv_bfloat16, __nv_bfloat16, false>(t.nt, t.rows, t.unroll, t.roll);
    return sm90::decode_dp_kernel_for<__half, __half, false>(t.nt, t.rows, t.unroll, t.roll);
  }
  if (operand_type(p) == DType::kBF16) return sm90::decode_kernel_for<__nv_bfloat16, __nv_bfloat16>(t.nt, t.rows, t.unroll);
  return sm90::decode_kernel_for<__half, __half>(t.nt, t.rows, t.unroll);
}

// Resident CTAs per SM of a kernel (queried once per kernel; 8 without a device, the maximum).
int ctas_per_sm(sm90::DecodeKernelFn fn) {
  static std::mutex mu;
  static std::unordered_map<const void*, int> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(reinterpret_cast<const void*>(fn));
  if (it != cache.end()) return it->second;
  int n = 8;
  if (device_info().available &&
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, sm90::kDecodeWarps * 32, 0) != cudaSuccess) {
    cudaGetLastError();
    n = 1;
  }
  cache[reinterpret_cast<const void*>(fn)] = std::max(n, 1);
  return std::max(n, 1);
}

// Raises the dynamic shared memory limit of `fn` to at least `bytes` (static + dynamic may then pass
// the default 48 KB), once per (device, kernel, size): the attribute is per device.
Status allow_dynamic_smem(sm90::DecodeKernelFn fn, size_t bytes, const std::string& api) {
  static std::mutex mu;
  static std::map<std::pair<int, const void*>, size_t> allowed;
  int dev = 0;
  FP4KIT_CUDA_RETURN(cudaGetDevice(&dev), (api + ": cudaGetDevice").c_str());
  std::lock_guard<std::mutex> lock(mu);
  size_t& have = allowed[std::make_pair(dev, reinterpret_cast<const void*>(fn))];
  if (have >= bytes) return Status::ok();
  FP4KIT_CUDA_RETURN(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
                     (api + ": cudaFuncSetAttribute").c_str());
  have = bytes;
  return Status::ok();
}

struct DecodeGeometry {
  int64_t row_blocks, token_groups, k_chunks, units, ctas, warps;
  int64_t partial_floats, counters;
  int dp_kw = 8;  // dp: warps per row block
};

// Geometry of one launch: `slots` copies of the n x k unit list (1 in dense mode), token tiles
// covering `token_rows` rows, kernel `fn` (for its occupancy). `grouped` (grouped mode) feeds the
// dp kernel's warps-per-row-block model with the group count and the routed rows (tactics.h).
DecodeGeometry decode_geometry(sm90::DecodeKernelFn fn, int nt, int rows, int unroll, bool dp, int64_t n, int64_t k,
                               int64_t token_rows, int64_t slots, const GroupedGemmParams* grouped = nullptr) {
  DecodeGeometry g;
  g.row_blocks = (n + 16 * rows - 1) / (16 * rows);
  g.token_groups = std::max<int64_t>(1, (token_rows + nt * 8 - 1) / (nt * 8));
  g.k_chunks = prepacked_shape(n, k).k_chunks;
  g.units = slots * g.row_blocks * g.k_chunks;
  if (dp) {  // per slot, CTAs of 8 / kw row blocks; partial sums stay in shared memory
    const int sms = sm_count();
    g.dp_kw = grouped ? grouped_dp_warps_per_row_block(grouped->groups, grouped->max_rows, g.row_blocks, g.k_chunks,
                                                       unroll, sms, fn ? ctas_per_sm(fn) : 1)
                      : int(dense_dp_warps_per_row_block(g.row_blocks, g.k_chunks, sms));
    g.ctas = slots * ((g.row_blocks + sm90::kDecodeWarps / g.dp_kw - 1) / (sm90::kDecodeWarps / g.dp_kw));
    g.warps = g.ctas * sm90::kDecodeWarps;
    g.partial_floats = 0;
    g.counters = 0;
    return g;
  }
  const int64_t resident = int64_t(sm_count()) * (fn ? ctas_per_sm(fn) : 1);
  g.ctas = decode_stream_k_ctas(g.units, resident, sm90::kDecodeWarps, decode_stream_k_min_units());
  g.warps = std::min(g.ctas * sm90::kDecodeWarps, g.units);
  g.partial_floats = g.token_groups * g.warps * 2 * 32 * (rows * nt * 4);
  g.counters = g.token_groups * slots * g.row_blocks;
  return g;
}

DecodeGeometry geometry(const Tactic& t, const GemmParams& p) {
  return decode_geometry(kernel_for(t, p), t.nt, t.rows, t.unroll, t.dp, p.n, p.k, p.m, 1);
}

// The argument fields both modes share; the workspace holds [partials][counters].
sm90::DecodeGemmArgs decode_args(const DecodeGeometry& g, int64_t n, int64_t k, const void* a, int64_t lda,
                                 const void* b_prepacked, const float* alpha, void* d, int64_t ldd,
                                 void* workspace) {
  sm90::DecodeGemmArgs x{};
  x.n = int(n);
  x.k = int(k);
  x.a = a;
  x.lda = lda ? lda : k;
  x.b_codes = static_cast<const uint4*>(b_prepacked);
  x.k_chunks = g.k_chunks;
  x.row_blocks = g.row_blocks;
  x.alpha = alpha;
  x.d = d;
  x.ldd = ldd ? ldd : n;
  x.partials = static_cast<float*>(workspace);
  x.counters = reinterpret_cast<int*>(x.partials + g.partial_floats);
  x.slots = 1;
  x.dp_kw = g.dp_kw;
  return x;
}

// Clears the stream-K counters and launches. The kernel leaves the counters at zero; clearing them
// here as well makes a workspace that was never initialized (or was used by an aborted launch)
// safe. A memset node is graph-capturable.
// With `pdl` the kernel is launched with programmatic stream serialization (GemmParams::enable_pdl).
Status decode_run(sm90::DecodeKernelFn fn, const DecodeGeometry& g, const sm90::DecodeGemmArgs& a,
                  cudaStream_t stream, const std::string& api, const std::string& tactic, bool pdl = false,
                  size_t smem = 0) {
  if (g.counters > 0)
    FP4KIT_CUDA_RETURN(cudaMemsetAsync(a.counters, 0, size_t(g.counters) * 4, stream), (api + ": counter reset").c_str());
  // A grid with fewer CTAs than SMs does not take PDL: the next grid's CTAs, launched early into the
  // free slots, doubled up on some SMs and left others idle (H100: 4096x14336 M=8, 128 CTAs,
  // 21.3 -> 26.7 us per call in graph replay with PDL).
  pdl = pdl && g.ctas * g.token_groups >= sm_count();
  if (smem > 0) FP4KIT_RETURN_IF_ERROR(allow_dynamic_smem(fn, smem, api));
  const cudaError_t e = launch_kernel(fn, dim3(unsigned(g.ctas), unsigned(g.token_groups)),
                                      dim3(sm90::kDecodeWarps * 32), smem, stream, pdl, a);
  return detail::cuda_status(e == cudaSuccess ? cudaGetLastError() : e, (api + ": launch " + tactic).c_str());
}

}  // namespace

Status decode_can_implement(const Tactic& t, const GemmParams& p) {
  if (p.m > 256)
    return Status(StatusCode::kNotSupported, "tactic " + t.name + ": the decode family serves M <= 256");
  if (!kernel_for(t, p)) return Status(StatusCode::kNotSupported, "tactic " + t.name + ": not instantiated");
  const DecodeGeometry g = geometry(t, p);
  if (g.token_groups > 65535)
    return Status(StatusCode::kNotSupported, "tactic " + t.name + ": too many token groups");
  if (t.dp && g.ctas >= (int64_t(1) << 31))
    return Status(StatusCode::kNotSupported, "tactic " + t.name + ": too many row blocks");
  return Status::ok();
}

namespace {
// Workspace bytes of A in B-fragment order (frag_a tactics), a multiple of 256.
size_t arranged_a_bytes(const Tactic& t, const GemmParams& p) {
  return t.frag_a && !ring_a(t, p) ? size_t(fragment_activation_shape(p.m, p.k).bytes()) : 0;
}
}  // namespace

// Workspace: [A staged (W4A4) or arranged in fragment order (frag_a)][partials][counters].
size_t decode_workspace_bytes(const Tactic& t, const GemmParams& p) {
  const DecodeGeometry g = geometry(t, p);
  const size_t a_bytes = t.frag_a ? arranged_a_bytes(t, p) : staged_a_bytes(p);
  return a_bytes + size_t(g.partial_floats) * 4 + size_t(g.counters) * 4;
}

Status decode_launch(const Tactic& t, const GemmParams& p_in, void* workspace, size_t workspace_bytes,
                     cudaStream_t stream) {
  const DecodeGeometry g = geometry(t, p_in);
  GemmParams p = p_in;
  bool pdl = p_in.enable_pdl;
  const size_t stage_smem = stage_a_smem_bytes(t, p_in);  // > 0: the GEMM decodes A itself
  // (A through the warps' rings: nothing in front. W4A4: NVFP4 codes and scales, RingA4.)
  const bool ring = ring_a(t, p_in);
  const bool w4a4 = p_in.a_dtype == DType::kE2M1x2;
  if (t.frag_a && !ring) {
    // One kernel copies (W4A16) or decodes (W4A4) A into fragment order.
    FP4KIT_RETURN_IF_ERROR(arrange_activations(p_in, workspace, stream));
    p.a = workspace;
    p.a_dtype = operand_type(p_in);
    p.a_scales = nullptr;
    p.lda = p.k;  // unused by the kernel in this mode
    workspace = static_cast<uint8_t*>(workspace) + arranged_a_bytes(t, p_in);
    // The GEMM depends on the arrangement, whose own wait covers the caller's kernels: it may always
    // launch early (its weights were final before the arrangement started).
    pdl = true;
  } else if (!(ring && w4a4)) {
    if (stage_smem == 0) FP4KIT_RETURN_IF_ERROR(stage_activations(p, workspace, stream));
    workspace = static_cast<uint8_t*>(workspace) + staged_a_bytes(p_in);
  }
  // Behind a staging kernel of our own each warp also asks L2 for the next chunks of its rows while
  // it waits (the rule and its measurements: decode_l2_prefetch_chunks, tactics.h).
  // (Not when the GEMM decodes A itself: it then waits for the caller's kernel, like W4A16, and lost
  // 0-4 % with the prefetch, session 15.)
  // (Nor with the ring: no kernel of our own in front, as for the row-major W4A16 tiles.)
  const int l2_prefetch = stage_smem > 0 || ring ? 0 : decode_l2_prefetch_chunks(t, p_in.a_dtype, p_in.enable_pdl);
  const PrepackedShape s = prepacked_shape(p.n, p.k);
  sm90::DecodeGemmArgs a = decode_args(g, p.n, p.k, p.a, p.lda, p.b_prepacked, p.alpha, p.d, p.ldd, workspace);
  a.m = int(p.m);
  a.b_scales = reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(p.b_prepacked) + s.code_bytes());
  a.bias = p.bias;
  a.l2_prefetch_chunks = l2_prefetch;
  if (ring && w4a4) {  // NVFP4 A through the rings, decoded by each warp
    a.a_scales = static_cast<const uint8_t*>(p.a_scales);
    a.a_row_bytes = (p.lda ? p.lda : p.k) / 2;
    a.a_sf_cols = format::round_up(p.k / 16, 4);
  }
  if (stage_smem > 0) {  // NVFP4 A, decoded by each CTA into [m][k_pad + 8] 16-bit shared memory
    a.lda = stage_a_row(p);
    a.a_scales = static_cast<const uint8_t*>(p.a_scales);
    a.a_row_bytes = (p.lda ? p.lda : p.k) / 2;
    a.a_sf_cols = format::round_up(p.k / 16, 4);
    return decode_run(stage_kernel_for(t, p_in), g, a, stream, "gemm", t.name, pdl, stage_smem);
  }
  // (The kernel for the caller's operands: p's A may now be the arranged or staged copy. W4A4: the
  // staging kernel above is then the kernel this one depends on.)
  return decode_run(kernel_for(t, p_in), g, a, stream, "gemm", t.name, pdl, ring ? ring_a_smem_bytes(t) : 0);
}

// ---- grouped mode (gemm/grouped.h) ------------------------------------------------------------------
namespace {

sm90::DecodeKernelFn grouped_kernel_for(const GroupedTactic& t, const GroupedGemmParams& p) {
  if (t.dp && p.groups_ready && !t.roll) {
    sm90::DecodeKernelFn fn = p.a_dtype == DType::kBF16
                                  ? sm90::decode_dp_ready_kernel_for<__nv_bfloat16>(t.nt, t.rows, t.unroll)
                                  : sm90::decode_dp_ready_kernel_for<__half>(t.nt, t.rows, t.unroll);
    if (fn) return fn;
  }
  if (t.dp) {
    if (p.a_dtype == DType::kBF16)
      return sm90::decode_dp_kernel_for<__nv_bfloat16, __nv_bfloat16, true>(t.nt, t.rows, t.unroll, t.roll);
    return sm90::decode_dp_kernel_for<__half, __half, true>(t.nt, t.rows, t.unroll, t.roll);
  }
  if (p.a_dtype == DType::kBF16) return sm90::grouped_decode_kernel_for<__nv_bfloat16>(t.nt, t.rows, t.unroll);
  return sm90::grouped_decode_kernel_for<__half>(t.nt, t.rows, t.unroll);
}

// Slots: at most one per group and one per row (a group with rows is active), so the static unit
// list covers every active group however the rows are distributed.
int64_t grouped_slots(const GroupedGemmParams& p) { return std::max<int64_t>(1, std::min(p.groups, p.max_rows)); }

// The kernel a grouped launch runs and its geometry. Many small row blocks with one warp each go to
// the balanced persistent kernel (grouped_dp_balanced; its grid is at most one resident wave), but
// not when the group list is ready early (FC2 after the fused permutation): that kernel requests
// its first weights before the PDL wait, which is worth more (H100 session 6).
struct GroupedPlan {
  sm90::DecodeKernelFn fn;
  DecodeGeometry g;
};

GroupedPlan grouped_plan(const GroupedTactic& t, const GroupedGemmParams& p) {
  GroupedPlan plan;
  plan.fn = grouped_kernel_for(t, p);
  // max_group_rows == 0: unknown, any group may hold all rows.
  const int64_t group_rows = p.max_group_rows > 0 ? std::min(p.max_group_rows, p.max_rows) : p.max_rows;
  plan.g = decode_geometry(plan.fn, t.nt, t.rows, t.unroll, t.dp, p.n, p.k, group_rows, grouped_slots(p), &p);
  if (!t.dp || p.groups_ready || t.roll) return plan;
  sm90::DecodeKernelFn balanced = p.a_dtype == DType::kBF16
                                      ? sm90::decode_dp_balanced_kernel_for<__nv_bfloat16>(t.nt, t.rows, t.unroll)
                                      : sm90::decode_dp_balanced_kernel_for<__half>(t.nt, t.rows, t.unroll);
  if (!balanced || !grouped_dp_balanced(p.groups, p.max_rows, plan.g.row_blocks, plan.g.dp_kw, sm_count(),
                                        ctas_per_sm(balanced)))
    return plan;
  const int64_t units = grouped_slots(p) * plan.g.row_blocks;
  plan.fn = balanced;
  plan.g.ctas = std::max<int64_t>(1, std::min<int64_t>(int64_t(sm_count()) * ctas_per_sm(balanced),
                                                       (units + sm90::kDecodeWarps - 1) / sm90::kDecodeWarps));
  plan.g.warps = plan.g.ctas * sm90::kDecodeWarps;
  return plan;
}

}  // namespace

Status grouped_decode_can_implement(const GroupedTactic& t, const GroupedGemmParams& p) {
  const GroupedPlan plan = grouped_plan(t, p);
  if (!plan.fn) return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name + ": not instantiated");
  const DecodeGeometry& g = plan.g;
  if (g.token_groups > 65535)
    return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name + ": too many token groups");
  if (t.dp && g.ctas >= (int64_t(1) << 31))
    return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name + ": too many row blocks");
  return Status::ok();
}

size_t grouped_decode_workspace_bytes(const GroupedTactic& t, const GroupedGemmParams& p) {
  const DecodeGeometry g = grouped_plan(t, p).g;
  return size_t(g.partial_floats) * 4 + size_t(g.counters) * 4;
}

Status grouped_decode_launch(const GroupedTactic& t, const GroupedGemmParams& p, void* workspace, cudaStream_t stream) {
  const GroupedPlan plan = grouped_plan(t, p);
  const DecodeGeometry& g = plan.g;
  const PrepackedShape s = prepacked_shape(p.n, p.k);
  // m, the scale pointer and alpha are per group (group_view in the kernel); no bias.
  sm90::DecodeGemmArgs a = decode_args(g, p.n, p.k, p.a, p.lda, p.b_prepacked, p.alpha, p.d, p.ldd, workspace);
  a.slots = grouped_slots(p);
  a.offsets = p.offsets;
  a.active = p.active;
  a.num_active = p.num_active;
  a.group_bytes = s.bytes();
  a.code_bytes = s.code_bytes();
  return decode_run(plan.fn, g, a, stream, "grouped gemm", t.name, p.enable_pdl);
}

}  // namespace fp4kit::gemm_impl
