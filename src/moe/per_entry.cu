// The per-entry small-batch path of fused_moe: two kernels, no permutation (when it runs:
// src/moe/moe_path.h; the pipeline it replaces: src/moe/fused_moe.cu).
//
// At T = 1 the pipeline's five launches (permute, FC1, SwiGLU, FC2, finalize) each cost several
// microseconds of launch and dependency latency on an H100, more than the active weights need.
// Here each (token t, slot j) "entry" is its own tiny GEMV against its expert's weights:
//
//  A  per_entry_fc1_kernel, grid (I/16, T*k), 8 warps. CTA (b, entry) with local expert e computes
//     the 16 up rows [16b, 16b+16) and the matching gate rows [I+16b, ...) of FC1_e · x[t]: the
//     warps split K = H into 8 contiguous chunk ranges, each streams the prepacked weights of both
//     tiles (128-bit ld.global.nc.L1::no_allocate, groups of 2 chunks x 2 tiles = 4 loads per lane;
//     grids of one wave at 2 CTAs per SM, or of two waves with rows of >= 64 chunks, request the next
//     group before computing the current one: per_entry_fc1_rolls),
//     decodes them to BF16/FP16 fragments (gemm/sm90/fragment_decode.cuh) and multiplies them with
//     mma.m16n8k16 (weights = the 16-row A operand, x[t] = every column of B; column 0 is used),
//     FP32 accumulation. x[t] is staged once per CTA in shared memory as the FC1 input the contract
//     defines (W4A16: the 16-bit row; W4A4: quantized with fc1_act_global (kExact) or decoded from
//     the NVFP4 input, then e2m1*sf). The 8 FP32 partials of each row are summed in warp order, then
//       y = r16((sum * 2^7) * alpha1[e])            (2^7: the prepacked weight scale, exact)
//       h = r16(silu(y_gate) * y_up)                (moe_device.cuh swiglu, IEEE FP32)
//     W4A4: h is quantized with fc2_act_global (kExact) and stored decoded; -> h[entry][16b..16b+16)
//     in the workspace. Entries whose expert is not local (or whose id is invalid) exit at once.
//     When experts repeat (per_entry_fc1_group > 1, e.g. Mixtral T = 2), CTA (b, entry) takes a slice
//     of its expert's entries instead, their tokens on columns 0..n-1 of the MMA, so that the
//     expert's rows are streamed once; entries that are not a slice's first exit.
//  B  per_entry_fc2_kernel, grid (H/(16R), T), 8 warps, launched with programmatic dependent launch
//     (PDL) after A. CTA (b, t) lists the local slots of token t in j order (shared memory), splits
//     each slot's K = I into KS contiguous ranges ("units", KS chosen per CTA to balance the 8
//     warps) and streams W2 rows [16Rb, 16R(b+1)) of each unit's expert (R = 2 when one row tile per
//     CTA would pass a wave, else 1; rows of at most 4 chunks: up to 8, to fit one wave;
//     groups of 8/R chunks; with R = 1 and rows of at most 12 chunks:
//     rolling groups of 4, the next requested first; per_entry.h has the rules). The weights do not depend on
//     A, so every warp issues its first load group BEFORE griddepcontrol.wait (overlapping A's
//     tail); h is read after it. Finalize, per row, in fixed order:
//       z_j = r16((Σ_ks partial[j][ks] * 2^7) * alpha2[e_j])      (whole K sum first)
//       acc = +0; acc = __fadd_rn(acc, __fmul_rn(final_scales[t, j], z_j)) for local j in order
//       out[t, row] = r16(acc)                                     (no local slot: +0)
//
// No atomics; every sum has a fixed order: bit-identical run to run. The numerics are the
// contract's (docs/MOE.md); against the pipeline only the FP32 summation order of the GEMMs differs.
// check_expert_ids: CTA (0, 0) of A also checks all ids (an id outside [0, E), an expert with more
// than T rows) into the workspace header; the host reads it between A and B (B then runs without
// PDL), so a bad batch returns before the output is written, as in the pipeline.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "common/cuda_check.h"
#include "fp4kit/device.h"
#include "gemm/prepacked_layout.h"
#include "gemm/tactics.h"  // RuleOverride
#include "gemm/sm90/decode_kernel.cuh"  // load_stream_u4/u2, mma_m16n8k16 (and fragment_decode.cuh)
#include "moe/moe_device.cuh"
#include "moe/moe_kernels.h"
#include "moe/moe_path.h"
#include "moe/per_entry.h"
#include "quant/launch.h"        // launch_kernel (PDL attribute)
#include "quant/quant_common.cuh"  // pdl_wait, pdl_launch_dependents

namespace fp4kit::moe_impl {
namespace {

using gemm_impl::sm90::decode_chunk;
using gemm_impl::sm90::load_stream_u2;
using gemm_impl::sm90::load_stream_u4;
using gemm_impl::sm90::mma_m16n8k16;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
// FC1: chunks per load group (x 2 tiles: 4 x 16-byte loads per lane). Two, not four, so that kernel A
// fits 3 CTAs per SM (79 registers): its CTAs are short (K = H split over 8 warps) and latency-bound,
// and more of them per SM hide more (H100 session 16, per-entry graph us, 4 at 2 CTAs/SM -> 2 at 3:
// Qwen3-30B T = 1 / 2 / 4 16.00 / 22.36 / 40.15 -> 14.29 / 20.81 / 38.43, DeepSeek-V3 -2 %, W4A4 -2..-10 %;
// fi-256 (I = 256) +0.4..+3 %). Grids of one wave at 2 CTAs per SM roll instead (per_entry.h).
constexpr int kUA = 2;
constexpr int kUB = 8;   // FC2: chunks per load group (one tile)
constexpr int kUBRoll = 4;  // FC2 with rolling groups (per_entry_fc2_rolls)
constexpr int kMaxTopK = int(kPerEntryMaxTopK);
constexpr int kMaxUnits = kMaxTopK + kWarps;  // units = n_local * KS, bounded in choose_splits
constexpr int kMaxGroup = kPerEntryMaxSliceTokens;  // tokens of one kernel-A slice (per_entry.h)
constexpr float kDecodeMul = gemm_impl::kWeightDecodeScale;
// Launch kernel B with programmatic dependent launch (its first weight loads overlap kernel A). With
// false, B starts after A has finished, as an ordinary stream-ordered launch (same results).
constexpr bool kUsePdl = true;

struct PerEntryArgs {
  int tokens = 0, top_k = 0, num_experts = 0, e_begin = 0, e_local = 0;
  int hidden = 0, inter = 0;            // H, I (multiples of 64)
  const int32_t* selected = nullptr;    // [T, k]
  const float* final_scales = nullptr;  // [T, k]
  const void* input = nullptr;          // [T, H] 16-bit, or codes [T, H/2]
  const uint8_t* input_scales = nullptr;  // NVFP4 input: 128x4 over T rows
  const float* fc1_act_global = nullptr;
  const float* fc2_act_global = nullptr;
  bool per_expert = false;
  const uint8_t* w1 = nullptr;  // prepacked [E_local][2I, H]
  int64_t w1_bytes = 0, w1_code_bytes = 0;
  const uint8_t* w2 = nullptr;  // prepacked [E_local][H, I]
  int64_t w2_bytes = 0, w2_code_bytes = 0;
  const float* alpha1 = nullptr;
  const float* alpha2 = nullptr;
  uint16_t* h = nullptr;         // workspace [T * k, I]
  // W4A4: the FC1 input rows precomputed once by per_entry_stage_x_kernel (workspace; [T, H], or
  // [T * k, H] when the activation global scale is per expert); null in W4A16.
  const uint16_t* xq = nullptr;
  uint16_t* out = nullptr;       // [T, H]
  int32_t* error_flag = nullptr;  // check_expert_ids only
  // Kernel A with expert slices (per_entry_fc1_group): the entries of one expert, up to `group` at a
  // time, share a CTA (their tokens on the MMA's columns); 1 = one entry per CTA.
  int group = 1;
  // Kernel A's CTAs of the entries from fc2_prefetch_from on ask L2 for their slice of their expert's
  // FC2 rows once their main loop is done, and kernel B then walks the tokens last to first, so that
  // it starts on those rows (per_entry_fc2_prefetch_entries). T*k (or more): no prefetch.
  int fc2_prefetch_from = 0x7fffffff;
};

// CTA b of nb asks L2 for rows [H*b/nb, H*(b+1)/nb) of local expert le's FC2 weights (codes, then
// scales: each a contiguous range of whole 16-row tiles in the prepacked layout).
__device__ __forceinline__ void prefetch_fc2_slice(const PerEntryArgs& a, int le, int b, int nb) {
  const int64_t tiles = a.hidden / 16;
  const int64_t t0 = tiles * b / nb, t1 = tiles * (b + 1) / nb;
  const int64_t code_per_tile = a.w2_code_bytes / tiles, sf_per_tile = (a.w2_bytes - a.w2_code_bytes) / tiles;
  const uint8_t* base = a.w2 + int64_t(le) * a.w2_bytes;
  gemm_impl::sm90::prefetch_l2(base + t0 * code_per_tile, uint32_t((t1 - t0) * code_per_tile));
  gemm_impl::sm90::prefetch_l2(base + a.w2_code_bytes + t0 * sf_per_tile, uint32_t((t1 - t0) * sf_per_tile));
}

// Local index of global expert id `id`, or -1 (another rank's expert, or an invalid id).
__device__ __forceinline__ int local_expert(const PerEntryArgs& a, int id) {
  if (id < 0 || id >= a.num_experts) return -1;
  const int le = id - a.e_begin;
  return le >= 0 && le < a.e_local ? le : -1;
}

// One warp: the error word of the batch (kBadExpertId, kGroupOverflow as the permutation writes it).
__device__ void check_ids(const PerEntryArgs& a) {
  const int lane = threadIdx.x & 31;
  const int n = a.tokens * a.top_k;
  int bits = 0;
  for (int i = lane; i < n; i += 32) {
    const int id = a.selected[i];
    if (id < 0 || id >= a.num_experts) {
      bits |= kBadExpertId;
      continue;
    }
    if (local_expert(a, id) < 0) continue;
    int count = 0;
    for (int q = 0; q < n; ++q) count += a.selected[q] == id ? 1 : 0;
    if (count > a.tokens) bits |= kGroupOverflow;
  }
  bits = int(__reduce_or_sync(kFullMask, unsigned(bits)));
  if (lane == 0) *a.error_flag = bits;
}

// ---- kernel A: FC1 + SwiGLU per entry ------------------------------------------------------------------
template <int U>
struct Fc1Regs {
  uint4 codes[U][2];  // [chunk][up, gate]
  uint2 scales[U][2];
};

template <int U>
__device__ __forceinline__ void load_fc1(Fc1Regs<U>& r, const uint4* codes, const uint2* scales, int64_t up_tile,
                                         int64_t gate_tile, int kc, int j0, int j_end, int lane) {
  const int g = lane >> 2;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int j = j0 + u;
    const bool valid = j < j_end;
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      const int64_t chunk = (t == 0 ? up_tile : gate_tile) * kc + j;
      r.codes[u][t] = valid ? load_stream_u4(codes + chunk * 32 + lane) : make_uint4(0, 0, 0, 0);
      r.scales[u][t] = valid ? load_stream_u2(scales + chunk * 8 + g) : make_uint2(0, 0);
    }
  }
}

// The B fragments of chunk j from a 16-bit row (as 32-bit words): every lane supplies column
// `lane / 4` of B with the same values, so each column of the product is the full dot product.
template <typename T>
__device__ __forceinline__ void mma_chunk(float (&acc)[4], uint4 w, uint2 sc, const uint32_t (&b)[4][2]) {
  uint32_t af[4][4];
  decode_chunk<T>(w, sc, af);
#pragma unroll
  for (int s = 0; s < 4; ++s) mma_m16n8k16<T>(acc, af[s], b[s][0], b[s][1]);
}

template <typename T, int U>
__device__ __forceinline__ void compute_fc1(const Fc1Regs<U>& r, const uint32_t* xs32, int j0, int j_end, int c,
                                            float (&acc)[2][4]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int j = j0 + u;
    if (j >= j_end) break;  // warp-uniform
    uint32_t b[4][2];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int w0 = j * 32 + 8 * s + c;  // 32-bit word of element j*64 + 16s + 2c
      b[s][0] = xs32[w0];
      b[s][1] = xs32[w0 + 4];
    }
    mma_chunk<T>(acc[0], r.codes[u][0], r.scales[u][0], b);
    mma_chunk<T>(acc[1], r.codes[u][1], r.scales[u][1], b);
  }
}

// Streams load groups of U chunks from chunk j (already requested into `regs`) to j_end: compute(regs, j)
// for each group, load(regs, j) to request one. kRoll: the next group is requested before the current
// one is computed (two register sets, the warp never has nothing in flight); else after it.
template <bool kRoll, int U, typename Regs, typename Load, typename Compute>
__device__ __forceinline__ void stream_groups(Regs& regs, int j, int j_end, Load load, Compute compute) {
  for (;;) {
    const int jn = j + U;
    const bool more = jn < j_end;
    Regs next;
    if (kRoll && more) load(next, jn);
    compute(regs, j);
    if (!more) break;
    if constexpr (kRoll) regs = next;
    else load(regs, jn);
    j = jn;
  }
}

// x[t] -> shared memory as the FC1 input of the contract (16-bit), 16 elements per thread and step.
// The CTA does trips part, part + parts, ... of kThreads threads (per_entry_stage_x_kernel spreads
// a row's trips over CTAs; kernel A stages whole rows: part 0 of 1).
// kStepSum: nvfp4_exact_roundtrip_lanes's (moe_device.cuh).
template <bool kBF16, GatherMode kMode, bool kStepSum = true>
__device__ __forceinline__ void stage_x(const PerEntryArgs& a, int t, int le, uint16_t* xs, int part = 0,
                                        int parts = 1) {
  const int blocks = a.hidden / 16;
  if constexpr (kMode == GatherMode::kQuantize) {
    // Two threads per block, 8 elements each (their amax meets in one shuffle): half the dependent
    // chain of one thread per block, and every thread busy (H100 session 6).
    const uint16_t* src = static_cast<const uint16_t*>(a.input) + int64_t(t) * a.hidden;
    const float* gs = a.fc1_act_global + (a.per_expert ? le : 0);
    if ((part + parts) * kThreads >= 2 * blocks) {
      // One trip (the staging kernel, a CTA per trip; kernel A with H <= 2048). x is requested before
      // the global scale is read and its terms computed, so the two loads overlap; with the scale
      // first, its load and division sat between the wait and x's load (two dependent memory
      // latencies on the critical path; H100 session 30: W4A4 at H = 2048 2.5-2.9 % faster).
      const int h = part * kThreads + int(threadIdx.x);
      const bool live = h < 2 * blocks;
      float x[8];
      const uint4 v = live ? __ldg(reinterpret_cast<const uint4*>(src + h * 8)) : make_uint4(0u, 0u, 0u, 0u);
      const auto c = quant::nvfp4_scale_const<QuantNumerics::kExact>(__ldg(gs));
      unpack8<kBF16>(v, x);
      nvfp4_exact_roundtrip_lanes<8, 1, kStepSum>(x, c);
      if (live) *reinterpret_cast<uint4*>(xs + h * 8) = pack8<kBF16>(x);
      return;
    }
    // The global scale's terms once, not once per trip (nvfp4_exact_roundtrip_lanes).
    const auto c = quant::nvfp4_scale_const<QuantNumerics::kExact>(*gs);
    for (int h0 = part * kThreads; h0 < 2 * blocks; h0 += parts * kThreads) {  // the same trips for every thread
      const int h = h0 + int(threadIdx.x);
      const bool live = h < 2 * blocks;
      float x[8] = {};
      if (live) unpack8<kBF16>(__ldg(reinterpret_cast<const uint4*>(src + h * 8)), x);
      nvfp4_exact_roundtrip_lanes<8, 1, kStepSum>(x, c);
      if (live) *reinterpret_cast<uint4*>(xs + h * 8) = pack8<kBF16>(x);
    }
  } else {
    for (int cb = part * kThreads + int(threadIdx.x); cb < blocks; cb += parts * kThreads) {
      uint16_t* dst = xs + cb * 16;
      if constexpr (kMode == GatherMode::kCopy) {
        const uint4* src =
            reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(a.input) + int64_t(t) * a.hidden + cb * 16);
        const uint4 v0 = __ldg(src), v1 = __ldg(src + 1);
        reinterpret_cast<uint4*>(dst)[0] = v0;
        reinterpret_cast<uint4*>(dst)[1] = v1;
      } else {
        const uint2 codes = *reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(a.input) +
                                                            int64_t(t) * (a.hidden / 2) + cb * 8);
        const uint8_t sf = a.input_scales[format::sf_offset_128x4(t, cb, a.hidden / 16)];
        nvfp4_decode16_store<kBF16>(codes, sf, dst);
      }
    }
  }
}

// W4A4: the FC1 input of each token (or entry, with per-expert activation scales) computed once,
// not by each of the I/16 CTAs of its entry (the NVFP4 round trip per CTA cost DeepSeek-V3's kernel A
// 24 us of 85 on an H100). One CTA per row; rows whose expert is not local are skipped. Used when
// the staging it saves is large enough (kPrestageMinWork). H100 graph µs, per-CTA staging ->
// prestaged: session 4 (per-CTA staging one thread per block), T = 1: DeepSeek-V3 (H 7168) 114.5 ->
// 100.2, Mixtral (H 4096) 109.1 -> 95.1; session 6 (two threads per block): Qwen3-30B (H 2048,
// I 768) T = 1 20.8 -> 20.3, T = 2 30.4 -> 28.1, Qwen3.6 (I 512) T = 2 22.8 -> 22.1, but T = 1
// 15.6 -> 15.8 (8 x 32 CTAs x 2048: the extra launch costs more than the staging it saves).
// Each row's trips of kThreads threads go to as many CTAs (blockIdx.y), one trip each: with
// one CTA per row the trips ran one after another, a dependent chain each (H200 ncu, T = 1, one CTA:
// DeepSeek-V3 (H 7168, 4 trips) 7.1 us, Mixtral (H 4096, 2 trips) 4.35 us, while kernel A waited).
template <bool kBF16, GatherMode kMode>
__global__ void __launch_bounds__(kThreads) per_entry_stage_x_kernel(const PerEntryArgs a, uint16_t* xq) {
  quant::pdl_wait();  // first kernel of the layer with MoeParams::enable_pdl (a no-op otherwise)
  // Kernel A (launched with PDL behind this one) then requests its weights while the rows are staged.
  quant::pdl_launch_dependents();
  const int r = blockIdx.x;
  int t = r, le = 0;
  if (a.per_expert) {
    t = r / a.top_k;
    le = local_expert(a, __ldg(a.selected + r));
    if (le < 0) return;
  }
  stage_x<kBF16, kMode>(a, t, le, xq + int64_t(r) * a.hidden, int(blockIdx.y), int(gridDim.y));
}

// Copies one 16-bit row of H elements (16-byte aligned) into shared memory.
__device__ __forceinline__ void copy_row(const uint16_t* src, uint16_t* dst, int hidden) {
  for (int i = threadIdx.x; i < hidden / 8; i += kThreads)
    reinterpret_cast<uint4*>(dst)[i] = __ldg(reinterpret_cast<const uint4*>(src) + i);
}

// kRoll (per_entry_fc1_rolls): the next load group is requested before the current one is computed
// (two register sets: 119 registers, 2 CTAs per SM), so no warp has nothing in flight while it
// decodes; the plain loop requests a group only after computing the previous one, at 3 CTAs per SM.
// kGroup (a.group > 1): CTA (b, e) computes the slice of entries of e's expert that starts at e — the
// entries with that expert whose rank among them (in entry order) is a multiple of a.group, and the
// group - 1 after it — or exits when e is not such a first entry. The slice's tokens are columns
// 0..n-1 of the MMA (lane / 4 reads token min(lane / 4, n - 1)), so the expert's weight rows are
// streamed once for all of them instead of once per entry; each entry's h row is written as the
// per-entry CTA would write it (the same sums in the same order: bit-identical).
template <bool kBF16, GatherMode kMode, bool kRoll, bool kGroup>
__global__ void __launch_bounds__(kThreads, kRoll ? 2 : 3) per_entry_fc1_kernel(const PerEntryArgs a) {
  using T = std::conditional_t<kBF16, __nv_bfloat16, __half>;
  constexpr int kG = kGroup ? kMaxGroup : 1;
  extern __shared__ uint4 x_smem[];  // [a.group][H] 16-bit
  __shared__ float part[kWarps][2][kG][16];
  __shared__ int members_s[kG];
  // W4A4: the epilogue's block factors for fc2_act_global, one per scale byte, tabulated while the
  // first weights are in flight, so its tail has no division (H100 session 31, with the step-sum round
  // trip: W4A4 T = 1..4 up to -4 %). Not with kGroup, whose staging of several rows is at the register
  // bound: the table and the step sum took its spills from 4 to 52 bytes (fi-32 / Mixtral T = 2
  // +0.4..+0.7 %); it keeps the code it had.
  constexpr bool kFactorTable = kMode != GatherMode::kCopy && !kGroup;
  __shared__ float fc2_factor[kFactorTable ? kNvfp4FactorTableSize : 1];
  // First kernel of the layer with MoeParams::enable_pdl: the previous kernel may still read h and
  // write the routing and x (a no-op otherwise). Waiting BEFORE the trigger matters: kernel B reads
  // the routing before its own wait. Behind per_entry_stage_x_kernel (a.xq set) that kernel has
  // waited for the previous one before it triggered this launch: routing and weights are final, so
  // the weights are requested first and only the staged rows wait (below).
  const bool staged = a.xq != nullptr;
  if (!staged) quant::pdl_wait();
  // Kernel B may be scheduled as soon as every CTA of this grid got here (it waits for this grid's
  // completion before reading h).
  quant::pdl_launch_dependents();
  if (a.error_flag != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x < 32) check_ids(a);

  const int entry = blockIdx.y;
  const int id = __ldg(a.selected + entry);
  const int le = local_expert(a, id);
  // A CTA that leaves early still waits for the staging kernel (when staged): a grid that never waits
  // may complete before its predecessor, and kernel B's wait covers only this grid.
  if (le < 0) {  // not routed here: this entry's h is never read
    if (staged) quant::pdl_wait();
    return;
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int kc = a.hidden / 64;
  const int j_begin = kc * warp / kWarps, j_end = kc * (warp + 1) / kWarps;
  const uint8_t* base = a.w1 + int64_t(le) * a.w1_bytes;
  const uint4* codes = reinterpret_cast<const uint4*>(base);
  const uint2* scales = reinterpret_cast<const uint2*>(base + a.w1_code_bytes);
  const int64_t up_tile = blockIdx.x, gate_tile = a.inter / 16 + int64_t(blockIdx.x);

  Fc1Regs<kUA> regs;
  load_fc1<kUA>(regs, codes, scales, up_tile, gate_tile, kc, j_begin, j_end, lane);  // in flight during staging
  int members = 1;  // entries of this CTA (kGroup: members_s)
  if constexpr (kGroup) {
    // Every thread finds the same slice (uniform exit); T * k is small on this path. After the first
    // weight request: an exiting CTA's loads are dropped, an owner's are in flight during the scan.
    int rank = 0;
    for (int q = 0; q < entry; ++q) rank += __ldg(a.selected + q) == id ? 1 : 0;
    if (rank % a.group != 0) {  // another CTA's slice
      if (staged) quant::pdl_wait();
      return;
    }
    members = 0;
    for (int q = entry, n = a.tokens * a.top_k; q < n && members < a.group; ++q)
      if (__ldg(a.selected + q) == id) {
        if (threadIdx.x == 0) members_s[members] = q;
        ++members;
      }
  }
  // The epilogue's scalars, requested now rather than after the last barrier (one L2 latency less
  // on the tail of the kernel that kernel B waits for).
  float alpha = 0.0f, fc2_gs = 0.0f;
  if (kFactorTable || 2 * warp < members) {  // the epilogue's warps (two tokens each), and the table's
    alpha = __ldg(a.alpha1 + le);
    if constexpr (kMode != GatherMode::kCopy) fc2_gs = __ldg(a.fc2_act_global + (a.per_expert ? le : 0));
  }
  // Entry e's FC1 input row into dst: the staging kernel's row, or staged here.
  auto stage_entry = [&](int e, uint16_t* dst) {
    const int te = e / a.top_k;
    if (staged) copy_row(a.xq + int64_t(a.per_expert ? e : te) * a.hidden, dst, a.hidden);
    else stage_x<kBF16, kMode, !kGroup>(a, te, le, dst);
  };
  uint16_t* xs = reinterpret_cast<uint16_t*>(x_smem);
  if constexpr (kGroup) __syncthreads();  // members_s
  if (staged) quant::pdl_wait();          // the staging kernel's rows
  if constexpr (kGroup) {
    for (int m = 0; m < members; ++m) stage_entry(members_s[m], xs + int64_t(m) * a.hidden);
  } else {
    stage_entry(entry, xs);
  }
  if constexpr (kFactorTable)
    if (threadIdx.x < kNvfp4FactorTableSize) fc2_factor[threadIdx.x] = nvfp4_exact_factor_of_byte(threadIdx.x, fc2_gs);
  __syncthreads();

  // This lane's B column: token min(lane / 4, members - 1) of the slice (columns past the slice
  // repeat its last token and are never stored).
  const uint32_t* xs32 = reinterpret_cast<const uint32_t*>(x_smem) + int64_t(min(lane >> 2, members - 1)) * (a.hidden / 2);
  float acc[2][4] = {};
  stream_groups<kRoll, kUA>(
      regs, j_begin, j_end,
      [&](Fc1Regs<kUA>& r, int j) { load_fc1<kUA>(r, codes, scales, up_tile, gate_tile, kc, j, j_end, lane); },
      [&](const Fc1Regs<kUA>& r, int j) { compute_fc1<T, kUA>(r, xs32, j, j_end, lane & 3, acc); });
  // After the main loop: the lines must outlive only the rest of this grid's stream. The expert is
  // read again rather than kept live across the loop (the plain kernels sit at 80 registers).
  if (threadIdx.x == 0 && entry >= a.fc2_prefetch_from)
    prefetch_fc2_slice(a, local_expert(a, __ldg(a.selected + entry)), blockIdx.x, gridDim.x);
  // kGroup W4A4: the terms of fc2_gs alone (1/gs: a division) computed while the other warps finish,
  // not on the epilogue's chain below.
  quant::Nvfp4ScaleConst<QuantNumerics::kExact> c2{};
  if constexpr (kMode != GatherMode::kCopy && !kFactorTable)
    if (2 * warp < members) c2 = quant::nvfp4_scale_const<QuantNumerics::kExact>(fc2_gs);
  {  // c[e] = row g, c[2 + e] = row g + 8, both of column (token) 2 (lane & 3) + e
    const int g = lane >> 2;
#pragma unroll
    for (int e = 0; e < (kGroup ? 2 : 1); ++e) {
      const int tok = 2 * (lane & 3) + e;
      if (tok < members) {
        part[warp][0][tok][g] = acc[0][e];
        part[warp][0][tok][g + 8] = acc[0][2 + e];
        part[warp][1][tok][g] = acc[1][e];
        part[warp][1][tok][g + 8] = acc[1][2 + e];
      }
    }
  }
  __syncthreads();
  // Warp w: tokens 2w (lanes 0..15) and 2w + 1 (lanes 16..31), row lane % 16 of the tile; the lanes
  // of a token past the slice carry zeros through the shuffles.
  if (2 * warp < members) {
    const int r = lane & 15, tok = 2 * warp + (lane >> 4);
    float h[1] = {0.0f};
    if (tok < members) {
      float up = part[0][0][tok][r], gate = part[0][1][tok][r];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) {
        up += part[w][0][tok][r];
        gate += part[w][1][tok][r];
      }
      const float y_up = act_to_float<kBF16>(float_to_act<kBF16>((up * kDecodeMul) * alpha));
      const float y_gate = act_to_float<kBF16>(float_to_act<kBF16>((gate * kDecodeMul) * alpha));
      h[0] = swiglu(y_gate, y_up);
    }
    if constexpr (kMode != GatherMode::kCopy) {  // W4A4: the 16-bit h quantized with fc2_act_global
      h[0] = act_to_float<kBF16>(float_to_act<kBF16>(h[0]));
      if constexpr (kFactorTable)
        nvfp4_exact_roundtrip_lanes_table<1>(h, quant::nvfp4_scale_const<QuantNumerics::kExact>(fc2_gs), fc2_factor);
      else
        nvfp4_exact_roundtrip_lanes<1, 1, false>(h, c2);
    }
    if (tok < members)  // rounds: r16(h)
      a.h[int64_t(kGroup ? members_s[tok] : entry) * a.inter + int64_t(blockIdx.x) * 16 + r] =
          uint16_t(float_to_act<kBF16>(h[0]));
  }
}

// ---- kernel B: FC2 + finalize per token ---------------------------------------------------------------
// U chunks of R row tiles (a kernel-B CTA covers 16 R rows of W2).
template <int U, int R>
struct Fc2Regs {
  uint4 codes[U][R];
  uint2 scales[U][R];
};

// K splits per local slot: the fewest load rounds of the slowest warp (ties: fewer splits).
__device__ __forceinline__ int choose_splits(int n_local, int kc) {
  int best = 1, best_rounds = 0x7fffffff;
  for (int ks = 1; ks <= kWarps && ks <= kc && n_local * ks <= kMaxUnits; ++ks) {
    const int units_per_warp = (n_local * ks + kWarps - 1) / kWarps;
    const int chunks = (kc + ks - 1) / ks;
    const int rounds = units_per_warp * ((chunks + kUB - 1) / kUB);
    if (rounds < best_rounds) {
      best = ks;
      best_rounds = rounds;
    }
  }
  return best;
}

// Chunks [j0, j0 + U) (those before j_end) of row tiles tile0 .. tile0 + R - 1.
template <int U, int R>
__device__ __forceinline__ void load_fc2(Fc2Regs<U, R>& r, const uint4* codes, const uint2* scales, int64_t tile0,
                                         int kc, int j0, int j_end, int lane) {
  const int g = lane >> 2;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int j = j0 + u;
    const bool valid = j < j_end;
#pragma unroll
    for (int t = 0; t < R; ++t) {
      const int64_t chunk = (tile0 + t) * kc + j;
      r.codes[u][t] = valid ? load_stream_u4(codes + chunk * 32 + lane) : make_uint4(0, 0, 0, 0);
      r.scales[u][t] = valid ? load_stream_u2(scales + chunk * 8 + g) : make_uint2(0, 0);
    }
  }
}

// h is written by kernel A: read after griddepcontrol.wait, through L2 (ld.global.cg). The warp
// first copies the group's h range (U chunks x 128 bytes, two 16-byte loads per lane: one L2 round
// trip) to its shared-memory slice hs, then reads the B fragments from there.
template <typename T, int U, int R>
__device__ __forceinline__ void compute_fc2(const Fc2Regs<U, R>& r, const uint16_t* h_row, uint32_t* hs, int j0,
                                            int j_end, int lane, float (&acc)[R][4]) {
  const int vectors = min(U, j_end - j0) * 8;  // 16-byte vectors of h in this group
  const uint4* src = reinterpret_cast<const uint4*>(h_row + int64_t(j0) * 64);
  uint4* dst = reinterpret_cast<uint4*>(hs);
#pragma unroll
  for (int v = lane; v < U * 8; v += 32)
    if (v < vectors) dst[v] = __ldcg(src + v);
  __syncwarp();
  const int c = lane & 3;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if (j0 + u >= j_end) break;  // warp-uniform
    uint32_t b[4][2];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int w0 = u * 32 + 8 * s + c;
      b[s][0] = hs[w0];
      b[s][1] = hs[w0 + 4];
    }
#pragma unroll
    for (int t = 0; t < R; ++t) mma_chunk<T>(acc[t], r.codes[u][t], r.scales[u][t], b);
  }
  __syncwarp();  // hs is refilled by the next group
}

// kRoll (per_entry_fc2_rolls): groups of kUBRoll chunks, the next one requested before the current
// one is computed; else groups of kUB chunks, each requested after the previous one is computed.
// R row tiles per CTA (per_entry_fc2_row_tiles): with 2, 4 or 8, each warp streams every tile against
// the same h fragments, in groups of kUB / R chunks (the same load registers and bytes per group; the
// accumulators are 4R floats). The chunks of a unit meet each tile's accumulator in the same order
// whatever R is: the same bits.
template <bool kBF16, bool kRoll, int R>
__global__ void __launch_bounds__(kThreads, 2) per_entry_fc2_kernel(const PerEntryArgs a) {
  static_assert(R == 1 || ((R == 2 || R == 4 || R == 8) && !kRoll), "several row tiles per CTA: plain groups");
  constexpr int U = kRoll ? kUBRoll : kUB / R;
  using T = std::conditional_t<kBF16, __nv_bfloat16, __half>;
  __shared__ int slot_s[kMaxTopK];
  __shared__ int le_s[kMaxTopK];
  __shared__ float alpha_s[kMaxTopK], scale_s[kMaxTopK];  // alpha2[le] and final_scales[t, j] per local slot
  __shared__ int n_local_s;
  __shared__ float part[kMaxUnits][16 * R];
  __shared__ uint4 h_smem[kWarps][kUB * 8];  // per warp: one group's h (kUB chunks x 128 bytes)
  // Last token first where kernel A asked L2 for the last entries' rows (fc2_prefetch_from).
  const int t = a.fc2_prefetch_from < a.tokens * a.top_k ? int(gridDim.y) - 1 - int(blockIdx.y) : int(blockIdx.y);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // Routing, alphas and weights are not written by kernel A: read before griddepcontrol.wait (A
  // triggers this launch only after its own wait, so the kernel before the layer has completed too).
  // The finalize's alpha2 and final-scale loads are issued here too and land in shared memory only
  // after the main loop: loaded inside the finalize's slot loop they cost one L2 latency per local
  // slot at the very end of the layer.
  int pos = -1;
  float alpha_r = 0.0f, scale_r = 0.0f;
  if (warp == 0) {
    int le = -1;
    if (lane < a.top_k) {
      scale_r = __ldg(a.final_scales + int64_t(t) * a.top_k + lane);
      le = local_expert(a, __ldg(a.selected + int64_t(t) * a.top_k + lane));
    }
    const unsigned mask = __ballot_sync(kFullMask, le >= 0);
    if (le >= 0) {
      pos = __popc(mask & lanemask_lt());  // local slots in j order
      slot_s[pos] = lane;
      le_s[pos] = le;
      alpha_r = __ldg(a.alpha2 + le);
    }
    if (lane == 0) n_local_s = __popc(mask);
  }
  __syncthreads();
  const int n_local = n_local_s;
  const int kc = a.inter / 64;
  const int splits = n_local > 0 ? choose_splits(n_local, kc) : 1;
  const int units = n_local * splits;
  const int64_t tile0 = int64_t(blockIdx.x) * R;  // first row tile of the CTA

  bool waited = false;
  for (int u = warp; u < units; u += kWarps) {
    const int idx = u / splits, ks = u - idx * splits;
    const int le = le_s[idx];
    const int64_t entry = int64_t(t) * a.top_k + slot_s[idx];
    const uint8_t* base = a.w2 + int64_t(le) * a.w2_bytes;
    const uint4* codes = reinterpret_cast<const uint4*>(base);
    const uint2* scales = reinterpret_cast<const uint2*>(base + a.w2_code_bytes);
    const uint16_t* h_row = a.h + entry * a.inter;
    const int j_begin = kc * ks / splits, j_end = kc * (ks + 1) / splits;
    float acc[R][4] = {};
    uint32_t* hs = reinterpret_cast<uint32_t*>(h_smem[warp]);
    auto load = [&](Fc2Regs<U, R>& r, int j) { load_fc2<U, R>(r, codes, scales, tile0, kc, j, j_end, lane); };
    auto compute = [&](const Fc2Regs<U, R>& r, int j) { compute_fc2<T, U, R>(r, h_row, hs, j, j_end, lane, acc); };
    // Each group is requested, then computed; rolling groups hand the stream to stream_groups after
    // the first request. (The plain groups keep this loop: ptxas gives the same loop written through
    // stream_groups ~3 % more instructions per group, scripts/sass_loops.py.)
    for (int j = j_begin; j < j_end; j += U) {
      Fc2Regs<U, R> regs;
      load(regs, j);
      if (!waited) {  // the first weight loads are in flight: now wait for kernel A's h
        quant::pdl_wait();
        waited = true;
      }
      if constexpr (kRoll) {
        stream_groups<true, U>(regs, j, j_end, load, compute);
        break;
      } else {
        compute(regs, j);
      }
    }
    if ((lane & 3) == 0) {  // column 0: c[0] = row g, c[2] = row g + 8 of each tile
      const int g = lane >> 2;
#pragma unroll
      for (int tt = 0; tt < R; ++tt) {
        part[u][16 * tt + g] = acc[tt][0];
        part[u][16 * tt + g + 8] = acc[tt][2];
      }
    }
  }
  if (!waited) quant::pdl_wait();
  if (pos >= 0) {
    alpha_s[pos] = alpha_r;
    scale_s[pos] = scale_r;
  }
  __syncthreads();
  if (threadIdx.x < 16 * R) {
    const int r = threadIdx.x;
    float acc = 0.0f;
    for (int idx = 0; idx < n_local; ++idx) {
      float z = part[idx * splits][r];
      for (int ks = 1; ks < splits; ++ks) z += part[idx * splits + ks][r];
      const float zr = act_to_float<kBF16>(float_to_act<kBF16>((z * kDecodeMul) * alpha_s[idx]));
      acc = __fadd_rn(acc, __fmul_rn(scale_s[idx], zr));  // no FMA, j order, from +0 (the contract)
    }
    a.out[int64_t(t) * a.hidden + tile0 * 16 + r] = uint16_t(float_to_act<kBF16>(acc));
  }
}

// ---- launchers --------------------------------------------------------------------------------------------
// `pdl`: the layer's first kernel (the staging one if it runs, else A) is launched with
// programmatic stream serialization (MoeParams::enable_pdl).
template <bool kBF16, GatherMode kMode>
Status launch_fc1(PerEntryArgs a, uint16_t* xq, bool pdl, int sms, cudaStream_t stream) {
  if constexpr (kMode != GatherMode::kCopy) {
    if (per_entry_prestages(a.tokens, a.top_k, a.inter, a.hidden)) {
      const int rows = a.per_expert ? a.tokens * a.top_k : a.tokens;
      // Trips of kThreads threads per row: 8 elements per thread when quantizing, 16 when decoding.
      const int trips = int((a.hidden / (kMode == GatherMode::kQuantize ? 8 : 16) + kThreads - 1) / kThreads);
      FP4KIT_CUDA_RETURN(quant::launch_kernel(per_entry_stage_x_kernel<kBF16, kMode>,
                                              dim3(unsigned(rows), unsigned(trips)), dim3(kThreads), 0, stream, pdl,
                                              a, xq),
                         "fused_moe: per_entry_stage_x_kernel");
      a.xq = xq;
      // A behind the staging kernel: launched early (PDL), it streams its first weights before it
      // waits for the rows; not with check_expert_ids (the host reads the error word after A).
      pdl = a.error_flag == nullptr;
    }
  }
  const dim3 grid(unsigned(a.inter / 16), unsigned(a.tokens * a.top_k));
  const size_t smem = size_t(a.group) * size_t(a.hidden) * 2;  // <= 32 KB (per_entry_fc1_group)
  const bool roll = per_entry_fc1_rolls(int64_t(grid.x) * grid.y, a.hidden / 64, sms);
  auto fn = a.group > 1 ? (roll ? per_entry_fc1_kernel<kBF16, kMode, true, true> : per_entry_fc1_kernel<kBF16, kMode, false, true>)
                        : (roll ? per_entry_fc1_kernel<kBF16, kMode, true, false> : per_entry_fc1_kernel<kBF16, kMode, false, false>);
  return detail::cuda_status(quant::launch_kernel(fn, grid, dim3(kThreads), smem, stream, pdl, a),
                             "fused_moe: per_entry_fc1_kernel");
}

template <bool kBF16>
Status launch_fc2(const PerEntryArgs& a, bool pdl, int sms, cudaStream_t stream) {
  const int r = per_entry_fc2_row_tiles(a.hidden / 16, a.tokens, a.inter / 64, sms, fc2_wide_ctas_override());
  const bool roll = per_entry_fc2_rolls(a.inter / 64, r);
  const dim3 grid(unsigned(a.hidden / (16 * r)), unsigned(a.tokens));
  auto fn = roll     ? per_entry_fc2_kernel<kBF16, true, 1>
            : r == 8 ? per_entry_fc2_kernel<kBF16, false, 8>
            : r == 4 ? per_entry_fc2_kernel<kBF16, false, 4>
            : r == 2 ? per_entry_fc2_kernel<kBF16, false, 2>
                     : per_entry_fc2_kernel<kBF16, false, 1>;
  return detail::cuda_status(quant::launch_kernel(fn, grid, dim3(kThreads), 0, stream, pdl, a),
                             "fused_moe: per_entry_fc2_kernel");
}

template <bool kBF16>
Status launch_fc1_mode(const PerEntryArgs& a, GatherMode mode, uint16_t* xq, bool pdl, int sms, cudaStream_t stream) {
  switch (mode) {
    case GatherMode::kCopy: return launch_fc1<kBF16, GatherMode::kCopy>(a, xq, pdl, sms, stream);
    case GatherMode::kQuantize: return launch_fc1<kBF16, GatherMode::kQuantize>(a, xq, pdl, sms, stream);
    case GatherMode::kDecode: return launch_fc1<kBF16, GatherMode::kDecode>(a, xq, pdl, sms, stream);
  }
  return Status(StatusCode::kInternal, "fused_moe: per-entry path: unknown input mode");
}

gemm_impl::RuleOverride& fc2_l2_prefetch_rule() {
  static gemm_impl::RuleOverride o("FP4KIT_MOE_FC2_PREFETCH");
  return o;
}
gemm_impl::RuleOverride& fc2_wide_ctas_rule() {
  static gemm_impl::RuleOverride o("FP4KIT_MOE_FC2_WIDE_CTAS");
  return o;
}

}  // namespace

bool fc2_l2_prefetch_enabled() { return fc2_l2_prefetch_rule().get() != 0; }
bool fc2_l2_prefetch_forced() { return fc2_l2_prefetch_rule().get() == 1; }
int set_fc2_l2_prefetch_override(int forced) { return fc2_l2_prefetch_rule().set(forced); }
int fc2_wide_ctas_override() { return fc2_wide_ctas_rule().get(); }
int set_fc2_wide_ctas_override(int forced) { return fc2_wide_ctas_rule().set(forced); }

Status run_per_entry(const MoeParams& p, const MoeDims& d, int32_t* header, void* h, void* xq, int sms,
                     cudaStream_t stream) {
  if (d.tokens <= 0 || !per_entry_supported(d.tokens, d.top_k, d.hidden))
    return Status(StatusCode::kInternal, "fused_moe: per-entry path used outside its limits");
  FP4KIT_RETURN_IF_ERROR(detail::require_device("fused_moe"));
  const bool check = p.check_expert_ids;
  if (check) FP4KIT_RETURN_IF_ERROR(detail::refuse_capture(stream, "fused_moe", detail::syncing_option("check_expert_ids")));

  PerEntryArgs a;
  a.tokens = int(d.tokens);
  a.top_k = int(d.top_k);
  a.num_experts = int(std::min<int64_t>(d.experts, 0x7fffffff));
  a.e_begin = int(d.e_begin);
  a.e_local = int(d.e_local);
  a.hidden = int(d.hidden);
  a.inter = int(d.inter);
  a.selected = p.selected_experts;
  a.final_scales = p.final_scales;
  a.input = p.input;
  a.input_scales = p.input_scales;
  a.fc1_act_global = p.fc1_act_global;
  a.fc2_act_global = p.fc2_act_global;
  a.per_expert = p.act_global_per_expert;
  const gemm_impl::PrepackedShape s1 = gemm_impl::prepacked_shape(2 * d.inter, d.hidden);
  const gemm_impl::PrepackedShape s2 = gemm_impl::prepacked_shape(d.hidden, d.inter);
  a.w1 = static_cast<const uint8_t*>(p.fc1_weights);
  a.w1_bytes = s1.bytes();
  a.w1_code_bytes = s1.code_bytes();
  a.w2 = static_cast<const uint8_t*>(p.fc2_weights);
  a.w2_bytes = s2.bytes();
  a.w2_code_bytes = s2.code_bytes();
  a.alpha1 = p.fc1_alpha;
  a.alpha2 = p.fc2_alpha;
  a.h = static_cast<uint16_t*>(h);
  a.out = static_cast<uint16_t*>(p.output);
  a.error_flag = check ? header : nullptr;
  a.group = per_entry_fc1_group(d.tokens, d.top_k, d.hidden, d.e_local);
  if (fc2_l2_prefetch_enabled()) {
    const int64_t n = per_entry_fc2_prefetch_entries(d.tokens * d.top_k, d.hidden, a.w1_bytes, a.w2_bytes,
                                                     device_info().l2_bytes, fc2_l2_prefetch_forced());
    a.fc2_prefetch_from = int(d.tokens * d.top_k - n);
  }

  const bool bf16 = p.act_dtype == DType::kBF16;
  const GatherMode mode = p.mode == MoeMode::kW4A16         ? GatherMode::kCopy
                          : p.input_dtype == DType::kE2M1x2 ? GatherMode::kDecode
                                                            : GatherMode::kQuantize;
  uint16_t* xq16 = static_cast<uint16_t*>(xq);
  const bool first_pdl = p.enable_pdl && !check;
  FP4KIT_RETURN_IF_ERROR(bf16 ? launch_fc1_mode<true>(a, mode, xq16, first_pdl, sms, stream)
                              : launch_fc1_mode<false>(a, mode, xq16, first_pdl, sms, stream));

  if (check) {
    int32_t flag = 0;
    FP4KIT_CUDA_RETURN(cudaMemcpyAsync(&flag, header, sizeof(int32_t), cudaMemcpyDeviceToHost, stream),
                       "fused_moe: cudaMemcpyAsync");
    FP4KIT_CUDA_RETURN(cudaStreamSynchronize(stream), "fused_moe: cudaStreamSynchronize");
    if (flag & kBadExpertId)
      return Status(StatusCode::kInvalidArgument, "fused_moe: selected_experts holds an expert id outside [0, E) (E = " +
                                                      std::to_string(d.experts) + ")");
    if (flag & kGroupOverflow)
      return Status(StatusCode::kInvalidArgument,
                    "fused_moe: a token selects the same expert twice and that expert gets more than num_tokens rows "
                    "(each row of selected_experts must hold distinct experts)");
  }
  // PDL: B's CTAs start streaming their weights while A finishes (not after a host synchronization).
  const bool pdl = kUsePdl && !check;
  return bf16 ? launch_fc2<true>(a, pdl, sms, stream) : launch_fc2<false>(a, pdl, sms, stream);
}

}  // namespace fp4kit::moe_impl
