// Which path fused_moe takes for a call (MoeParams::path): the permute + grouped-GEMM pipeline
// (src/moe/fused_moe.cu), the per-entry small-batch path (src/moe/per_entry.cu) or the fused-decode
// small-batch path (src/moe/fused_decode.cu). Host only, no CUDA; unit-tested on the CPU
// (tests/moe/moe_path_test.cpp). The kAuto rule comes from H100 measurements (`fp4kit bench moe
// --path pipeline|per-entry|fused-decode --graph`, figures below).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "fp4kit/moe.h"
#include "moe/moe_kernels.h"  // use_fused_permute: the fused-decode path's limits

namespace fp4kit::moe_impl {

// Limits of the per-entry kernels: kernel B keeps one token's local slots in shared memory (one
// per lane of a warp), kernel A stages one hidden-state row (2H bytes, 16-bit) in shared memory
// within the 48 KB default, and its grid has one row of CTAs per (token, slot) entry.
inline constexpr int64_t kPerEntryMaxTopK = 32;
inline constexpr int64_t kPerEntryMaxHidden = 16384;
inline constexpr int64_t kPerEntryMaxEntries = 65535;  // T * top_k (gridDim.y)

inline bool per_entry_supported(int64_t tokens, int64_t top_k, int64_t hidden) {
  return top_k >= 1 && top_k <= kPerEntryMaxTopK && hidden >= 1 && hidden <= kPerEntryMaxHidden && tokens >= 0 &&
         tokens <= kPerEntryMaxEntries / top_k;
}

// The kAuto heuristic: per_entry_preferred and fused_decode_preferred below, then the pipeline. The
// history of the per-entry rule (H100 per-entry vs pipeline): session 3, Qwen3.6-35B-A3B T = 1, 2, 4
// 13.9 / 19.7 / 36.2 vs 23.2 / 29.7 / 41.6 us, DeepSeek-V3 T = 1 91.7 vs 109.7, Mixtral T = 1 81.6 vs
// 101.3 (T >= 4 per-entry up to 3.8x slower then); session 5 / 16, T = 4 (I >= 512 per-entry, fi-256
// the pipeline: 65.7 vs 53.1 in session 16); session 21 (H200), Mixtral T = 2 with expert slices
// 104.2 vs the pipeline's 114.2, T = 4 226.2 vs 215.2; session 25 below.
// Whether uniform routing of T tokens x k slots is expected to repeat local experts (E_local < 4·T·k;
// below that, about (T·k)² / (2·E_local) <= T·k / 8 repeats): per_entry_preferred's 33..64-entry band
// and the per-entry kernel-A expert slices (per_entry_fc1_group).
constexpr bool experts_repeat(int64_t tokens, int64_t top_k, int64_t e_local) { return e_local < 4 * tokens * top_k; }

// Limits of the fused-decode path: the fused permutation's (one kernel ranks every entry).
inline bool fused_decode_supported(int64_t tokens, int64_t top_k, int64_t e_local) {
  // (tokens is bounded before the product, which would overflow for a huge tokens * top_k.)
  return tokens >= 0 && top_k >= 1 && e_local >= 1 && tokens <= kFusedMaxRows / top_k &&
         use_fused_permute(tokens * top_k, e_local);
}

// Warps of the fused-decode kernel's grid (its launch: 2 resident CTAs of 8 warps per SM), the W of
// the rules below.
inline double fused_decode_warps(int sms) { return 16.0 * (sms > 0 ? sms : 132); }

// Local experts expected to get rows when each of T tokens picks top_k distinct experts uniformly.
inline double expected_active_experts(int64_t tokens, int64_t top_k, int64_t e_local) {
  const double e = double(e_local > 0 ? e_local : 1);
  const double miss = 1.0 - std::min(1.0, double(top_k) / e);  // one token does not pick a given expert
  return e * (1.0 - std::pow(miss, double(tokens)));
}

// Rows per active local expert expected under uniform routing (1: no expert repeats).
inline double expected_rows_per_expert(int64_t tokens, int64_t top_k, int64_t e_local) {
  return double(tokens * top_k) / std::max(expected_active_experts(tokens, top_k, e_local), 1.0);
}

// Where the per-entry path is taken (before the fused-decode path is considered). The per-entry path
// costs 2 kernel launches and no permutation, but streams each (token, slot) entry's FC1 rows
// separately: an expert chosen by several of the T tokens is read once per entry (once per slice
// when experts repeat, per_entry_fc1_group), where the other paths read each active expert once.
//  * T == 1, or at most 4 entries (Mixtral T = 2: repeated experts, streamed once per slice).
//  * Up to 32 entries with at most 1.2 expected rows per active expert (few repeats), and up to 64
//    entries where the experts are not expected to repeat (E_local >= 4·T·k) on layers of H <= 4096
//    (short FC1 rows, whose per-entry CTAs are short and many) or of I <= 256 (FC2 rows of at most 4
//    chunks, where kernel B takes up to 8 row tiles per CTA: per_entry_fc2_row_tiles).
// H100 session 25 (docs/PERF.md; kernel B with two plain row tiles per CTA where one tile per CTA
// would take more than a wave, per_entry_fc2_row_tiles), graph us with PDL, per-entry vs the path
// the previous rule took: DeepSeek-V3 T = 2 / 4 143.8 / 274.8 vs fused-decode 156.0 / 280.3, fi-32
// T = 2 (1.14 rows) 140.4 vs 150.7, fi-256 T = 4 48.2 vs the pipeline's 54.1, Qwen3.6 T = 8 45.0 vs
// fused-decode 53.4 (W4A4 48.4 vs 54.3), T = 7 40.8 vs fused-decode 49.9; T = 5 / 6 (the pipeline
// before, not timed there; it took 35.0 / 59.8 at T = 4 / 8) 31.5 / 36.2, fused-decode 42.5 / 44.0.
// Kept off: Qwen3-30B T = 5 / 6 (E_local = 128 < 4·T·k; 1.13 / 1.17 rows) 51.9 / 61.9 vs 48.5 / 50.7,
// fi-32 T = 4 (1.46 rows) 246.5 vs 210.9, Qwen3-30B T = 8 (1.24 rows) 77.1 vs 60.4, fi-256 (until
// session 37, below) / DeepSeek-V3 T = 8 (H = 7168) 82.6 / 531.9 vs fused-decode 77.6 / 473.0, every preset at T = 16. Earlier rules and figures: session 3 (per-entry
// vs pipeline, Qwen3.6 T = 1 13.9 vs 23.2 us), session 5 and 16 (T = 4), session 21 (slices).
// Session 37 (H100 run 3, docs/PERF.md; kernel B with up to 8 row tiles per CTA on I <= 256), per-entry
// forced vs the previous rule's path, W4A16 / W4A4: fi-256 T = 5 / 6 53.01 / 54.84, 55.77 / 56.39 vs the
// pipeline's 70.55 / 68.47, 71.19 / 69.41; T = 7 66.00 / 66.95 vs 76.52 / 74.93; T = 8 71.13 / 72.44 vs
// fused-decode 75.69 / 76.75. (Only H = 7168 was measured in that band; larger H up to
// kPerEntryMaxHidden is an extrapolation: kernel A's CTAs then stream longer rows.)
inline constexpr double kPerEntryMaxRowsPerExpert = 1.2;
inline constexpr int64_t kPerEntryShortRowsHidden = 4096;
inline constexpr int64_t kPerEntryShortFc2Inter = 256;

inline bool per_entry_preferred(int64_t tokens, int64_t top_k, int64_t hidden, int64_t inter, int64_t e_local) {
  const int64_t entries = tokens * top_k;
  if (tokens == 1 || entries <= 4) return true;
  if (expected_rows_per_expert(tokens, top_k, e_local) > kPerEntryMaxRowsPerExpert) return false;
  return entries <= 32 || (entries <= 64 && !experts_repeat(tokens, top_k, e_local) &&
                           (hidden <= kPerEntryShortRowsHidden || inter <= kPerEntryShortFc2Inter));
}

// 32-row blocks per FC2 unit of the fused-decode kernel: 2 when K = I is at most 4 chunks of 64, so
// that a unit's fixed costs (expert lookup, the wait for its FC1, the release of its F2 rows) cover
// more than 4 chunks per row tile (H100, session 9, fi-256 (I = 256) T = 8 / 16 / 32: 89.1 / 150.6
// / 243.1 -> 81.2 / 137.0 / 217.9 us; with I = 512 (Qwen3.6) 4-13 % slower, so not there).
inline int fused_decode_fc2_blocks(int64_t inter) { return inter / 64 <= 4 ? 2 : 1; }

// The kAuto rule for the fused-decode path (src/moe/fused_decode.cu). Its persistent grid has
// W = 16 warps per SM, each streaming one unit at a time: an FC1 unit (16 up + 16 gate rows of one
// expert, K = H, split along K into 2 or 4 parts when the units are few: fused_decode_fc1_parts) or
// an FC2 unit (32 rows, K = I). It beats the pipeline when both kinds of units keep the warps busy
// and the experts have few rows (its units run once per 8-row token tile): FC1 units >= 0.7 W
// before the split (0.4 W when the FC2 units are 64 rows: fi-256 T = 8 81.2 us fused vs 88.5
// pipeline, T = 4 59.2 vs 57.8), FC2 units >= W, <= 6 rows per expert.
// H100, session 9, graph replay, W4A16 (W4A4 alike), fused vs best of pipeline / per-entry, us:
// Qwen3.6 T = 8 / 16 / 64: 54.5 / 75.4 / 165 vs 59.2 / 92.0 / 226 (T = 4: 41.3 vs 33.2);
// Qwen3-30B T = 16 / 32: 91.8 / 122.8 vs 104.1 / 136.0 (T = 4: 49.7 vs 43.9); DeepSeek-V3 T = 2 /
// 8 / 64: 156 / 478 / 1933 vs 161 / 513 / 2164; fi-32 T = 2..16 2-8 % faster, T = 32 (8 rows per
// expert) 480 vs 431; fi-256 T = 64 340 vs 379, T = 16 156 vs 149 (102 experts x 16 FC1 units;
// with FC1 in 2 parts 147.9 vs 150.3); Qwen3-30B T = 8 with 2 parts 62.4 vs 68.8; Mixtral (8
// experts: 1024 FC2 units of K = 14336) 3-40 % slower everywhere.
inline bool fused_decode_preferred(int64_t tokens, int64_t top_k, int64_t hidden, int64_t inter, int64_t e_local,
                                   int sms) {
  if (!fused_decode_supported(tokens, top_k, e_local) || tokens < 1) return false;
  const double warps = fused_decode_warps(sms);
  const double active = expected_active_experts(tokens, top_k, e_local);
  const int fc2_blocks = fused_decode_fc2_blocks(inter);
  const double fc1_units = active * double(inter / 16);
  const double fc2_units = active * double(hidden / 32 / fc2_blocks);
  const double rows = expected_rows_per_expert(tokens, top_k, e_local);
  const double fc1_min = fc2_blocks == 2 ? 0.4 : 0.7;
  return rows <= 6.0 && fc1_units >= fc1_min * warps && fc2_units >= warps;
}

// The path fused_moe takes for a call (never kAuto); the shape checks of fused_moe passed (a forced
// path that is not supported has been rejected by them). kAuto: per-entry when supported and
// preferred (per_entry_preferred), else fused-decode when preferred, else the pipeline.
inline MoePath resolve_moe_path(MoePath path, int64_t tokens, int64_t top_k, int64_t hidden, int64_t inter,
                                int64_t e_local, bool w4a4, int sms) {
  if (path != MoePath::kAuto) return path;
  (void)w4a4;  // no rule depends on the mode since session 16; callers and tests still state it
  if (per_entry_supported(tokens, top_k, hidden) && per_entry_preferred(tokens, top_k, hidden, inter, e_local))
    return MoePath::kPerEntry;
  if (fused_decode_preferred(tokens, top_k, hidden, inter, e_local, sms)) return MoePath::kFusedDecode;
  return MoePath::kPipeline;
}

inline bool is_moe_path(MoePath path) {
  return path == MoePath::kAuto || path == MoePath::kPipeline || path == MoePath::kPerEntry ||
         path == MoePath::kFusedDecode;
}

// The pipeline's FC1 reading its token rows in place on the 256x128 grouped tile (fused_moe.cu,
// fc1_gathers_rows; docs/MOE.md "FC1 reading the tokens in place"). It saves the gather kernel's copy
// (per row) but loads each row as its own TMA box once per n tile of 256 weight rows and per stage,
// ~14.5 SM cycles a box against ~3 cycles per row in one [128 x 64] box (fp4kit_micro_tma_rows, H100),
// while a 256x128 stage holds 1024 cycles of tensor work. H100 session 35 (layer time, in place vs
// gathered): fi-256 (2 n tiles) at 48 / 64 / 96 rows per expert -7.2..-7.8 / -5.2..-6.7 / -5.6..-5.8 %;
// Qwen3.6 (4 n tiles) -1.6..-3.7 / -1.0..-2.5 / +2.5..+3.5 %; Qwen3-30B (6) at 64 rows +-0.5 %;
// DeepSeek-V3 (16) at 64 rows +3.2..+4.4 %.
inline constexpr int64_t kRowGatherMaxNTiles = 4;
inline constexpr int64_t kRowGatherMaxRowsWide = 64;  // rows per expert, 3..4 n tiles
inline bool fc1_row_gather_pays(int64_t fc1_n, int64_t mean_rows) {
  const int64_t n_tiles = (fc1_n + 255) / 256;
  return n_tiles <= 2 || (n_tiles <= kRowGatherMaxNTiles && mean_rows <= kRowGatherMaxRowsWide);
}

}  // namespace fp4kit::moe_impl
