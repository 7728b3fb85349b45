// The per-entry small-batch path of fused_moe (kernels and overview: src/moe/per_entry.cu; when it
// is taken: src/moe/moe_path.h).
#pragma once

#include <cstdint>

#include "fp4kit/moe.h"
#include "fp4kit/status.h"
#include "moe/moe_path.h"  // experts_repeat, kPerEntryShortFc2Inter
#include "moe/moe_workspace.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::moe_impl {

// Kernel A (FC1 + SwiGLU) streams with rolling load groups at 2 CTAs per SM when its grid (I/16 x
// T·k CTAs) fits one wave of those; else plain groups at 3 CTAs per SM, which hide more latency with
// more, shorter CTAs. H200, rolling everywhere vs never (docs/PERF.md session 20 run 4, per-entry
// graph us with PDL, W4A16): fi-256 T = 1 / 2 (128 / 256 CTAs) -10.9 / -7.0 %, Qwen3.6 T = 1 (256)
// -4.9 %; Qwen3-30B T = 1 (384 CTAs) +7.7 %, DeepSeek-V3 / Mixtral (>= 1024) -1..+4 %. Also up to two
// waves when each warp streams >= 8 chunks of its K = H (k_chunks = H / 64 over 8 warps): H100 session
// 25, fi-256 T = 4 (512 CTAs, 14 chunks per warp) 48.2 -> 44.4 us (W4A4 50.3 -> 46.3). Only that point
// was measured inside the band; Qwen3-30B T = 1 (384 CTAs, 4 chunks per warp) is the one outside it by
// K, and beyond two waves rolling lost (Qwen3-30B T = 4, 1536 CTAs: 33.9 -> 36.8; Qwen3.6 T = 4 / 8,
// 1024 / 2048 CTAs: +7 %).
constexpr bool per_entry_fc1_rolls(int64_t ctas, int64_t k_chunks, int sm_count) {
  return ctas <= 2 * int64_t(sm_count) || (ctas <= 4 * int64_t(sm_count) && k_chunks >= 64);
}
// Kernel B (FC2 + finalize) streams rolling 4-chunk groups when each FC2 row is short (K = I of at
// most 12 chunks of 64) and its CTAs take one row tile each (per_entry_fc2_row_tiles below), else
// plain groups of 8/R chunks of R tiles. Each group's h is read from L2 when it is computed:
// with long rows twice as many groups cost more than the overlap gains (same run: Qwen3.6 / Qwen3-30B /
// fi-256 (8 / 12 / 4 chunks) T = 1 -5.8 / -2.3 / -3.4 %; DeepSeek-V3 / Mixtral (32 / 224) +6..+7 %).
// Both rules against neither (run 5, medians of 3, auto path): fi-256 T = 1 / 2 -12.5 / -7.8 %,
// Qwen3.6 T = 1 -2.8 % (W4A4 -3.6 %), Qwen3-30B T = 1 -3.4 %; the presets they leave alone within +-2 %.
constexpr bool per_entry_fc2_rolls(int64_t k_chunks, int row_tiles) { return row_tiles == 1 && k_chunks <= 12; }
// Kernel B's row tiles (16 rows each) per CTA: 2 (plain groups) when one tile per CTA would take more
// than one wave of 2 CTAs per SM (H/16 x T CTAs; DeepSeek-V3 / fi-32 at T = 1: 448 for 264 slots), so
// that the warps also share each h fragment between two tiles; else 1. Two plain tiles also beat the
// rolling single tiles on short rows (H100 session 25, graph us with PDL, W4A16 / W4A4): fi-256 T = 1
// 17.55 -> 15.08, T = 4 56.1 -> 48.2; Qwen3-30B T = 4 38.5 / 41.2 -> 34.1 / 37.2; Qwen3.6 T = 4 / 8
// 28.6 / 52.1 -> 24.4 / 45.2 (with 2 tiles where one tile per CTA fits a wave, Qwen3 T = 2: +3..+9 %).
// Rows of at most 4 chunks (K = I <= kPerEntryShortFc2Inter = 256: fi-256; moe_path.h's rule sends 33..64
// entries of such layers here) take as many tiles per CTA (1, 2, 4 or 8) as the grid needs to fit one
// wave of 2 CTAs per SM, else the most that divide H/16 (8, or 4 where H % 128 == 64): such CTAs are
// short (two tiles: one load group of 4 chunks per warp), so halving their number pays for more load
// groups per warp (kUB / R chunks of R tiles: the same load registers per group; the accumulators grow
// to 4R floats, and the 8-tile kernel spills 20-28 bytes at its 128 registers). H100 session 37, graph us with PDL, medians of 3, against
// the two-tile rule (W4A16 / W4A4): run 1, 4 tiles: fi-256 T = 2 (448 -> 224 CTAs) 23.38 / 24.11 ->
// 21.59 / 22.16, T = 4 (896 -> 448) 42.92 / 44.15 -> 40.74 / 41.75, T = 1 (224 -> 112) +11 / +16 %; run
// 2, 8 tiles: T = 3 (672 -> 168) 37.55 / 39.02 -> 34.81 / 36.26 (4 tiles, 336: 36.24 / 37.81), T = 4
// (224) 43.08 / 44.35 -> 37.56 / 38.58, T = 2 (112) 24.07 / 24.76 against 21.53 / 22.20 for 4 tiles.
// Longer rows lose with more tiles (their load groups halve: DeepSeek-V3 T = 2 / 4 and fi-32 T = 2 (32
// chunks) +4.0..+4.6 % with 4), and grids that fall under one CTA per SM lose more (with 4: Qwen3.6 /
// Qwen3-30B T = 4 +20..+24 %, DeepSeek-V3 / fi-32 T = 1 +34..+35 %, Mixtral T = 2 +39..+40 %).
// `wide` (tests, A/B runs): -1 the rule, 0 never more than 2 (the rule before session 37), 1 the most
// tiles that divide `tiles` (8, 4, 2) whatever the grid. (0 leaves moe_path.h's path rule as it is:
// fi-256 T = 5..8 then runs the per-entry path with two tiles, slower than the old paths there.)
constexpr int per_entry_fc2_row_tiles(int64_t tiles, int64_t tokens, int64_t k_chunks, int sm_count, int wide = -1) {
  const int64_t slots = 2 * int64_t(sm_count);
  if (wide == 1 || (wide < 0 && k_chunks <= kPerEntryShortFc2Inter / 64)) {
    int widest = 1;
    for (int r = 1; r <= 8; r *= 2) {
      if (tiles % r != 0) break;
      widest = r;
      if (wide != 1 && tiles / r * tokens <= slots) return r;
    }
    return widest;
  }
  return tiles % 2 == 0 && tiles * tokens > slots ? 2 : 1;
}
// FP4KIT_MOE_FC2_WIDE_CTAS=0|1 at the first call, or set_fc2_wide_ctas_override (tests: -1 = the rule,
// 0 = never more than 2 tiles, 1 = the most that divide H / 16; returns the previous): `wide` above.
int fc2_wide_ctas_override();
int set_fc2_wide_ctas_override(int forced);

// Kernel A asks L2 for kernel B's FC2 rows of the last n entries (each CTA its slice of its
// expert's H rows, after its main loop), and kernel B walks the tokens last to first, so that B's
// first CTAs read them from L2 while the rest of the layer's bytes stream from HBM. The lines must
// survive what kernel A still streams after them: n entries' FC1 and FC2 bytes within half the L2.
// Only where H >= 4096 (the H = 2048 presets, whose CTAs are short: up to +9.5 % with 16 MB or more,
// -1.3..+3.8 % with 4..8 MB).
// H100 session 36 run 2, graph us with PDL, medians of 3, this rule (L2 25 MB of 50) vs none, W4A16 /
// W4A4: fi-256 T = 1 (all 8 entries) 15.01 / 15.61 -> 13.86 / 14.69, T = 2 / 3 (8 of 16 / 24) +0.9 /
// -1.4 %, -0.7 / -1.7 %, T = 4 +0.6 / +0.2 %; DeepSeek-V3 and fi-32 T = 1 / 2 (one entry) -0.7..-1.3 %;
// Mixtral (FC1 66 MB per entry) none. Run 1: prefetching at the start of kernel A, or more entries
// than fit (DeepSeek-V3 7 entries: +10 %), was slower. `all`: every entry (tests).
constexpr int64_t per_entry_fc2_prefetch_entries(int64_t entries, int64_t hidden, int64_t fc1_bytes, int64_t fc2_bytes,
                                                 int64_t l2_bytes, bool all = false) {
  if (all) return entries;
  if (hidden < 4096 || l2_bytes <= 0 || fc1_bytes + fc2_bytes <= 0) return 0;
  const int64_t n = (l2_bytes / 2) / (fc1_bytes + fc2_bytes);
  return n < entries ? n : entries;
}
// On by default; FP4KIT_MOE_FC2_PREFETCH=0|1 at the first call (1: every entry), or
// set_fc2_l2_prefetch_override (tests: -1 = the rule, 0 = off, 1 = every entry; returns the previous).
bool fc2_l2_prefetch_enabled();
bool fc2_l2_prefetch_forced();
int set_fc2_l2_prefetch_override(int forced);

// Kernel A's expert slices: tokens per CTA (the entries of one expert, their tokens on the MMA's 8
// columns) when experts repeat (T >= 2 and E_local < 4 T k: experts_repeat, moe_path.h),
// so that each expert's FC1 rows are streamed once, not once per entry; as many as the 16-bit rows
// fit in 32 KB of shared memory (with the kernel's 8 KB of partial sums within the 48 KB default; 3
// CTAs per SM keep fitting), at most the MMA's 8 columns. Else 1 (one entry per CTA): without
// repeats the slice search only delays each short CTA (H200 session 21 run 4, per-entry graph us,
// slices vs one entry per CTA: Mixtral T = 2 / 4 / 8 104.2 / 226.2 / 329.8 vs 115.0 / 238.0 / 466.5;
// Qwen3.6 T = 2 / 4 17.2 / 31.5 vs 14.6 / 26.7, Qwen3-30B T = 4 42.4 vs 35.2).
// W4A4: the FC1 input is computed once by per_entry_stage_x_kernel before kernel A when the per-CTA
// staging that saves (T·k entries x I/16 CTAs x H elements) reaches kPrestageMinWork (per_entry.cu has
// the measurements).
constexpr int64_t kPrestageMinWork = 640 * 1024;
constexpr bool per_entry_prestages(int64_t tokens, int64_t top_k, int64_t inter, int64_t hidden) {
  return tokens * top_k * (inter / 16) * hidden >= kPrestageMinWork;
}

// Each CTA finds its slice by scanning the T·k routing ids: not beyond kPerEntryMaxSliceScan entries
// (a forced per-entry path at large T keeps one entry per CTA).
constexpr int64_t kPerEntryMaxSliceScan = 256;
constexpr int kPerEntryMaxSliceTokens = 8;  // the 8 columns of mma.m16n8k16 (kernel A's part array)
constexpr int per_entry_fc1_group(int64_t tokens, int64_t top_k, int64_t hidden, int64_t e_local) {
  if (tokens < 2 || !experts_repeat(tokens, top_k, e_local) || tokens * top_k > kPerEntryMaxSliceScan) return 1;
  const int64_t fit = hidden > 0 ? (32 * 1024) / (2 * hidden) : 1;
  const int64_t g = tokens < fit ? tokens : fit;
  return g < 1 ? 1 : g > kPerEntryMaxSliceTokens ? kPerEntryMaxSliceTokens : int(g);
}

// Runs the whole layer for T = d.tokens > 0 tokens. Assumes fused_moe's argument and workspace
// checks passed and per_entry_supported(top_k, hidden). Workspace use: `h` is the act region of
// the pipeline's layout (16-bit [max_tokens * top_k, max(H, I)] >= [T * top_k, I]), `header` its
// int32 error word (written only with check_expert_ids). `sms`: the device's SM count (the launch rules
// above).
Status run_per_entry(const MoeParams& p, const MoeDims& d, int32_t* header, void* h, void* xq, int sms,
                     cudaStream_t stream);

}  // namespace fp4kit::moe_impl
