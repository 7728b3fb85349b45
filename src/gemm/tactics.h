// The GEMM tactic table: every kernel configuration gemm() can run, each answering the CUTLASS
// host questions (can_implement, workspace size, launch). The autotuner enumerates this table.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/validate.h"
#include "fp4kit/gemm.h"

namespace fp4kit::gemm_impl {

enum class Family { kDecode, kWgmma };

struct Tactic {
  int id;
  Family family;
  // decode family
  int nt = 0;      // 8-token MMA tiles (tokens per pass = 8 nt)
  int rows = 0;    // 16-row tiles per warp work unit
  int unroll = 0;  // chunks per load group
  bool dp = false;  // data-parallel row blocks with split-K inside the CTA (else stream-K over warps)
  bool frag_a = false;  // dp only: A arranged in B-fragment order first (gemm/fragment_activations.h)
  bool roll = false;    // dense dp only: rolling load groups (stream_rolling, sm90/decode_kernel.cuh)
  // wgmma family
  int block_n = 0;  // weight rows per CTA (the wgmma M side)
  int block_m = 0;  // tokens per CTA (the wgmma N side)
  int stages = 0;
  bool stream_k = false;  // stream-K over (tile, k chunk) units instead of tiles + split-K
  // Data-parallel full waves of tiles, then the last, partial wave's tiles split in two K halves
  // reduced inside 2-CTA clusters (wgmma_split_tail_dp_tiles); only where that wave is at most half full.
  bool split_tail = false;
  // 64-K chunks (pipeline stages) per consumer step: 2 = two stages waited for, decoded and issued
  // as one wgmma batch (wgmma_kernel.cuh kStep); the split-K / stream-K units are then pairs of chunks.
  int step_chunks = 1;
  std::string name;
};

const std::vector<Tactic>& tactic_table();
const Tactic* find_tactic(int id);

// Problem-independent checks are done by gemm(); these answer per tactic.
Status can_implement(const Tactic& t, const GemmParams& p);
size_t workspace_bytes(const Tactic& t, const GemmParams& p);
Status launch(const Tactic& t, const GemmParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// Split-K factor of a dense wgmma launch with `tiles` output tiles over `k_chunks` 64-K chunks:
// about one wave of (tile, split) units on `sms` SMs, each split >= 4 chunks, at most 16; 1 when
// the tiles already fill the SMs (sm90/wgmma_kernel.cuh).
int64_t wgmma_k_splits(int64_t tiles, int64_t k_chunks, int sms);

// Short-K split-K factor (wgmma_split_shrink_rule): where K is at most 32 chunks, `ks` (a power of two
// > 2, one wave of tiles * ks CTAs) is halved while the clusters of ks CTAs do not all fit at once and
// those of ks / 2 do; `resident(c)` is how many clusters of c CTAs the device holds at once (0: unknown).
// Otherwise ks unchanged.
int64_t wgmma_short_k_splits(int64_t ks, int64_t tiles, int64_t k_chunks, int sms,
                             const std::function<int64_t(int)>& resident);

// Split-tail decomposition (Tactic::split_tail) of `tiles` output tiles of `k_chunks` 64-K chunks on a
// persistent grid of `grid` CTAs (even: clusters of 2): the number of tiles run whole, in full waves,
// before the tail's tiles run as two K halves each, one per CTA of a cluster; -1 where it does not
// apply (less than one full wave, a tail of more than grid / 2 tiles, none, or halves under 4 chunks).
int64_t wgmma_split_tail_dp_tiles(int64_t tiles, int64_t k_chunks, int64_t grid);
// The tactic of the same tile without the split tail (`id` itself for any other tactic).
int without_split_tail(int id);

// A device with at least this much peak DRAM bandwidth per SM (GB/s) is "HBM-rich" for the small-M
// heuristic: H200 (4.8 TB/s / 132 SMs = 36.5) is, H100 SXM (3.35 TB/s, 25), NVL (3.9 TB/s, 30) and
// PCIe (2.0, 18) are not.
// Such a device needs more weight bytes in flight per SM, and on the H200 the rolling and ring
// tiles win at points where the H100 measured otherwise (decode_dp_heuristic, docs/GEMM.md "H200").
constexpr double kHbmRichGbpsPerSm = 33.0;
bool hbm_rich(double dram_peak_gbps, int sm_count);
// hbm_rich() of the current device (device_info()); FP4KIT_HBM_RICH=0 or 1 overrides it (A/B runs).
bool device_hbm_rich();
// An A/B switch of the heuristics: environment variable `name` when it is exactly one of the
// characters of `allowed` (a digit), as that digit; else -1. Callers read it once (static).
int env_digit(const char* name, const char* allowed);
// A rule's override for A/B runs and tests: -1 = the rule, 0 = off, 1 = on (or its forced form);
// starts from environment variable `name` ("0" / "1", read at the first use of the static that holds
// it); set() takes any int (< 0: the rule) and returns the previous value.
class RuleOverride {
 public:
  explicit RuleOverride(const char* name) : v_(env_digit(name, "01")) {}
  int get() const { return v_.load(std::memory_order_relaxed); }
  int set(int forced) { return v_.exchange(forced < 0 ? -1 : forced == 1 ? 1 : 0); }

 private:
  std::atomic<int> v_;
};
// W4A4 on the 8-token 32-row fragment-order tiles whose warps stream 8 K slices: the warps' rings carry
// the NVFP4 codes and scales and the warps decode them (decode_kernel.cuh RingA4), instead of waiting
// for the arrangement kernel. On where measured faster: devices that are not HBM-rich (`rich`:
// hbm_rich(); H100, session 23); FP4KIT_W4A4_RING=0 or 1 overrides it (A/B runs).
// decode_dp_heuristic's W4A4 rule and decode_host.cu's ring_a (with device_hbm_rich()) follow it.
bool w4a4_ring_enabled(bool rich);

// 65..128 tokens: 128x128 s6 (fitted to M) also where it needs 4 K splits of >= 32 chunks; 0 = at most
// 2 splits, the rule before session 39 (tactics.cpp small_m_wgmma_heuristic).
RuleOverride& wgmma_four_split_one_pass();
// Above 256 tokens the full-wave model also weighs each tile's split-tail tactic (wave_model_tactic);
// 0 = never, the rule before session 40 (FP4KIT_WGMMA_SPLIT_TAIL).
RuleOverride& wgmma_split_tail_rule();
// Up to 16 tokens at K <= 14336 where the 16-row dp CTAs do not cover the SMs (narrow layers: k / v
// projections): the dp tiles instead of stream-K over warps or the wgmma 16-token tile (session 46: 2-11x
// faster on the H100; W4A4 past K = 4096 since session 47); 0 = the rule before (FP4KIT_DECODE_NARROW_DP).
RuleOverride& decode_narrow_dp_rule();
// With that rule, 9..32 tokens on narrow layers (17..32 only where N·K <= 16 Mi) take the rolling 8-token
// 16-row tile in ceil(M / 8) passes, and 33..64 tokens (N·K <= 16 Mi, 2048 <= K <= 14336; W4A16 to 2048 rows,
// W4A4 since session 49) the smallest dp token tile whose passes fit one wave (session 47); 0 = the 16-token
// tile at 9..16 and wgmma at 17..64 (FP4KIT_DECODE_NARROW_M8).
RuleOverride& decode_narrow_m8_rule();
// Session 49: 17..32 tokens past N·K = 16 Mi (K <= 14336) where the 16-row dp tile's passes fit one wave, 33..48
// on two passes of the 32-row 24-token dp tile where they fill 90..100 % of a wave (N·K <= 16 Mi: o), and the
// 33..64-token narrow rule in W4A4 too (W4A16 to 2048 rows); 0 = the rules before (FP4KIT_DECODE_MID_M).
RuleOverride& decode_mid_m_rule();
// Session 49: 33..48 tokens on narrow layers (<= 16 row tiles of 128) past N·K = 16 Mi take one pass of 128x64
// (fitted to M) instead of two of 128x24; 0 = the rule before (FP4KIT_WGMMA_NARROW_ONE_PASS).
RuleOverride& wgmma_narrow_one_pass_rule();
// 17..24 tokens: the 24-token decode tile where its 16-row CTAs of 8 warps fit one wave (session 41);
// 0 = never, the rule before (FP4KIT_DECODE_M24).
RuleOverride& decode_m24_rule();
// 17..24 tokens: the 32-row 24-token decode tile on the larger layers whose CTAs fill >= 70 % of a wave
// (W4A16: 8 warps per row block of <= 32 chunks each; session 42); 0 = never, the rule before
// (FP4KIT_DECODE_M24_R32).
RuleOverride& decode_m24_r32_rule();

// The 128-row wgmma tiles of 24..64 tokens take two stages per consumer step (Tactic::step_chunks = 2;
// session 43), with a ring of 8 stages where a split-K unit's K range is 16..32 chunks and 12 beyond
// (below 16: one stage); with it, the heuristic takes 128 rows instead of 256 at 17..32 tokens where the
// 128-row tiles fit one wave with split-K units of 64..128 chunks (sessions 45-46: 8192x16384, not
// 8192x28672; small_m_wgmma_heuristic). On HBM-rich devices too since session 47 (H200 A/B: 0.962..1.013).
// 0 = never, the rules before (FP4KIT_WGMMA_PAIRS).
RuleOverride& wgmma_pair_step_rule();
// `id` (a heuristic's or fit_token_tile's choice for p) with that rule applied; `sms` > 0.
int wgmma_pair_step_tactic(int id, const GemmParams& p, int sms);
// Split-K at short K (<= 32 chunks, K <= 2048): a 4- or 8-way split whose clusters do not all fit is
// halved while the halved split's clusters fit, instead of reducing through the workspace
// (wgmma_host.cu wgmma_split; session 44, default since session 45's H100 A/B: 0.59..0.80x where it acts).
// FP4KIT_WGMMA_SPLIT_SHRINK=0 (or set(0)) restores the split before.
RuleOverride& wgmma_split_shrink_rule();

// Decode stream-K (tactics 0-6 and the grouped decode's stream-K): CTAs of `warps_per_cta` warps over `units`
// (row block, k chunk) units, at most `resident` CTAs, each warp's range at least `min_units` long (fewer
// CTAs rather than a small layer spread over every resident warp: each row block's fix-up sums one partial
// per warp that shares it). At least 1.
int64_t decode_stream_k_ctas(int64_t units, int64_t resident, int warps_per_cta, int64_t min_units);
// The `min_units` of the launches: kDecodeStreamKMinUnits; FP4KIT_DECODE_SK_MIN_UNITS (1..256) overrides it
// (A/B runs; read once). 8: session 46 run 4 (H100, narrow layers, 1 / 4 / 8 / 16 tried: 4 and 8 led, 8 at M <= 8).
constexpr int64_t kDecodeStreamKMinUnits = 8;
int64_t decode_stream_k_min_units();

// The dimensions every GEMM entry point takes: M, N, K in [1, 2^31), K a multiple of 16 (the heuristic
// and the launch arithmetic assume them).
constexpr bool gemm_dims_ok(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kLimit = detail::kGemmDimLimit;
  return m > 0 && n > 0 && k > 0 && m < kLimit && n < kLimit && k < kLimit && k % 16 == 0;
}
// Shape heuristic used for tactic = -1 until a tuned entry exists (`rich`: hbm_rich of the device).
int heuristic_tactic(const GemmParams& p, int sm_count, bool rich = false);
// The same weight rows with the narrowest instantiated wgmma token tile that holds m (24 for a
// 32-token tile, 48 for 64, 80..112 for 128, 144..224 for 256) or, up to 256 tokens where the tile
// takes two passes over M, half of m; else `id` itself. Applied to the heuristic's and to tuned
// choices (tuning measures power-of-two M buckets up to 256, where no narrower tile fits).
int fit_token_tile(int id, int64_t m);
// The data-parallel decode tactic for m tokens over `rows` weight rows of depth k, or -1 when
// stream-K is the better decomposition (too few CTAs to fill the GPU).
// (w4a4: A is NVFP4; from 3 tokens on it takes the fragment-order tiles, whose arrangement kernel decodes A.)
// bf16_out: the output is BF16 (W4A4's NVFP4 ring kernel exists only for it).
int decode_dp_heuristic(int64_t m, int64_t rows, int64_t k, int sm_count, bool w4a4 = false, bool rich = false,
                        bool bf16_out = true);

// Warps per row block of the dp decode kernel (decode_host.cu) from K alone: the largest power of
// two <= k_chunks / 8 within [1, 8], so that each warp streams >= ~8 chunks (two load groups).
int64_t dp_warps_per_row_block(int64_t k_chunks);

// Dense dp: the K-only rule, halved while the CTAs stay >= 1.5 per SM, so that very wide layers
// with short K give each warp a longer stream (H100 session 5, 28672x4096 M = 1: kw 8 / 4 / 2 =
// 28.6 / 26.5 / 24.4 us; every other bench layer keeps kw).
int64_t dense_dp_warps_per_row_block(int64_t row_blocks, int64_t k_chunks, int sms);

// Whether the dense fragment-order dp tile of `nt` token tiles and `rows` 16-row tiles per block takes
// rolling load groups (Tactic::roll) when each warp streams `chunks_per_warp` chunks of K. H100
// session 15 (docs/PERF.md), graph us, rolling vs plain: 8-token tiles, 6..8 tokens: down (16-row
// blocks, 28 chunks per warp) -9.5 %, o (16-row, 8) -5 %, gate_up (32-row, 32) -6.5 %, 8192x8192
// (32-row, 16) -2.5 %; 16-token tiles: gate_up (32-row, 32) -3.4 %, o (16-row, 8) -1..-3 %. Not:
// the longest streams (8192x28672, 56 per warp: W4A4 +6 %; down at 16 tokens, 28: +10 %) and
// 32-row blocks with 8 per warp (qkv: +1..2 %).
bool decode_roll(int nt, int rows, int64_t chunks_per_warp);

// Chunks of each row tile, after its first load group, that a dense dp decode warp asks L2 to
// prefetch before its PDL wait (decode_dp_kernel; 0: none). Only where the GEMM waits for a
// staging kernel of our own, during which HBM would otherwise idle: W4A4 behind stage_activations
// (with enable_pdl), and the 8-token fragment-order tiles behind arrange_activations (always PDL).
// H100: W4A4 M = 1..4 1-9 % (session 6; 6144x4096 M = 1 +3.5 %); dpf m8 (M = 6..8) 0-8 % in W4A16
// and W4A4, while the 16-token dpf tiles lost up to 4 % with it (session 14). Not for plain W4A16,
// whose previous GEMM's tail already overlaps (it lost 0.4 us with it, session 6).
int decode_l2_prefetch_chunks(const Tactic& t, DType a_dtype, bool enable_pdl);

// Warps per row block (1, 2, 4 or 8) of the grouped dp decode kernel, from a model of its three
// losses: the last wave (CTAs just above a multiple of the resident slots), the ramp of short
// per-warp streams (each warp's range costs about 1.5 load groups of latency), and SMs left with
// too few warps to keep HBM busy (< 16). `groups` experts, `rows` routed rows in total (the active
// groups are estimated as for uniform routing), `row_blocks` per group, `unroll` chunks per load
// group, `ctas_per_sm` resident CTAs of the kernel. Below 16 estimated active groups it keeps the
// k-only rule (each warp >= ~8 chunks). H100 MoE T = 8 / 16 sweeps (docs/PERF.md, session 5): it
// picks the measured best of {1, 2, 4, 8} for FC1 and FC2 of Qwen3.6-35B-A3B, Qwen3-30B-A3B and
// fi-256.
int grouped_dp_warps_per_row_block(int64_t groups, int64_t rows, int64_t row_blocks, int64_t k_chunks, int unroll,
                                   int sms, int ctas_per_sm);

// Whether the grouped dp launch with one warp per row block (kw == 1) should run the balanced
// persistent kernel (decode_dp_balanced_kernel: row blocks handed to warps round-robin instead of
// 8 per CTA): when the expected units (active groups, uniform routing, x row blocks) give every
// resident warp at least 3 (H100 session 6, fi-256 FC2 (7168 x 256): T = 16 -7 % of the layer,
// T = 8 -2 %, T = 4 (2 units per warp) +2.6 %; fewer units: neutral).
bool grouped_dp_balanced(int64_t groups, int64_t rows, int64_t row_blocks, int kw, int sms, int ctas_per_sm);

}  // namespace fp4kit::gemm_impl
