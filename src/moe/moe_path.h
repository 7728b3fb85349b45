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

// The kAuto heuristic. The per-entry path costs 2 kernel launches instead of the pipeline's 5 (at
// small T each launch and dependency costs microseconds on an H100, more than the weights take),
// but it streams each (token, slot) entry's expert weights separately: an expert chosen by several
// of the T tokens is read once per entry, where the pipeline reads every active expert once and
// multiplies all its rows together. So:
//  * T == 1: the k slots of one token name k experts (distinct in practice), so both paths read the
//    same weights: per-entry whenever it is supported.
//  * T > 1: per-entry only while the entries are few (T·k <= 32: the launch overhead dominates)
//    and the experts are many compared with the entries (E_local >= 4·T·k: uniform routing then
//    repeats few experts, about (T·k)² / (2·E_local) <= T·k / 8) — or at most 4 entries, whose
//    repeated experts kernel A streams once per slice (per_entry_fc1_group, session 21).
// Measured on an H100 (W4A16, graph replay, uniform routing; docs/PERF.md, session 3), per-entry vs
// pipeline: Qwen3.6-35B-A3B T = 1, 2, 4: 13.9 / 19.7 / 36.2 vs 23.2 / 29.7 / 41.6 us, T = 8: 64.4 vs
// 67.4 (T·k = 64: not taken), T = 16: 117.8 vs 103.3; DeepSeek-V3 T = 1, 2, 4: 91.7 / 171.6 / 318.4
// vs 109.7 / 182.2 / 327.7 us, T = 8: 654 vs 597; Mixtral (E = 8, k = 2) T = 1: 81.6 vs 101.3 us,
// T = 2: 153.3 vs 146.7 (repeated experts: not taken), T >= 4: per-entry up to 3.8x slower.
// Session 5 (after the pipeline's grouped GEMMs got faster; docs/PERF.md): T·k = 17..32 stays
// per-entry only in W4A16 and with I >= 512 (T = 4, per-entry vs pipeline: Qwen3.6 33.3 vs 36.5 us,
// Qwen3-30B 44.1 vs 46.8, DeepSeek-V3 298.7 vs 314.9, but fi-256 (I = 256) 62.6 vs 55.5; W4A4, whose
// per-entry FC1 quantizes x in every CTA: Qwen3.6 44.9 vs 41.4, Qwen3-30B 61.9 vs 51.5, fi-256 69.7
// vs 60.6).
// Session 16 (the per-entry kernels' tails shortened, kernel A at 3 CTAs/SM; docs/PERF.md): W4A4 at
// T·k = 17..32 with I >= 512 too (T = 4, per-entry vs pipeline, graph us: Qwen3.6 33.98 vs 35.25,
// Qwen3-30B 43.91 vs 44.31; fi-256 (I = 256) 65.7 vs 53.1 stays on the pipeline).
// Whether uniform routing of T tokens x k slots is expected to repeat local experts (E_local < 4·T·k;
// below that, about (T·k)² / (2·E_local) <= T·k / 8 repeats): the per-entry path's rules below and its
// kernel-A expert slices (per_entry_fc1_group).
constexpr bool experts_repeat(int64_t tokens, int64_t top_k, int64_t e_local) { return e_local < 4 * tokens * top_k; }

inline bool per_entry_preferred(int64_t tokens, int64_t top_k, int64_t inter, int64_t e_local) {
  const int64_t entries = tokens * top_k;
  if (tokens == 1) return true;
  // Up to 4 entries with repeated experts: kernel A's expert slices stream each expert's FC1 rows once
  // (per_entry_fc1_group) and kernel B's one wave of CTAs shares W2 rows in L2 (H200 session 21 run 4,
  // Mixtral T = 2, graph us: 104.2 / 106.5 vs the pipeline's 114.2 / 112.6, W4A16 / W4A4; T = 4
  // (8 entries) 226.2 / 233.0 vs 215.2 / 214.4: the pipeline).
  if (entries <= 4) return true;
  if (experts_repeat(tokens, top_k, e_local)) return false;
  if (entries <= 16) return true;
  return entries <= 32 && inter >= 512;
}

// The decision for one call (the shape checks of fused_moe passed; a forced kPerEntry that is not
// supported has been rejected by them).
// Limits of the fused-decode path: the fused permutation's (one kernel ranks every entry).
inline bool fused_decode_supported(int64_t tokens, int64_t top_k, int64_t e_local) {
  return tokens >= 0 && top_k >= 1 && e_local >= 1 && use_fused_permute(tokens * top_k, e_local);
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
  const double rows = double(tokens * top_k) / std::max(active, 1.0);
  const double fc1_min = fc2_blocks == 2 ? 0.4 : 0.7;
  return rows <= 6.0 && fc1_units >= fc1_min * warps && fc2_units >= warps;
}

// The path fused_moe takes for a call (never kAuto); the shape checks of fused_moe passed (a forced
// path that is not supported has been rejected by them). kAuto: per-entry at T = 1 (one token's k
// experts: both paths read the same weights, the per-entry one with 2 launches), else fused-decode
// when preferred, else per-entry when preferred, else the pipeline.
inline MoePath resolve_moe_path(MoePath path, int64_t tokens, int64_t top_k, int64_t hidden, int64_t inter,
                                int64_t e_local, bool w4a4, int sms) {
  if (path != MoePath::kAuto) return path;
  (void)w4a4;  // no rule depends on the mode since session 16; callers and tests still state it
  const bool per_entry = per_entry_supported(tokens, top_k, hidden);
  if (per_entry && tokens == 1) return MoePath::kPerEntry;
  if (fused_decode_preferred(tokens, top_k, hidden, inter, e_local, sms)) return MoePath::kFusedDecode;
  if (per_entry && per_entry_preferred(tokens, top_k, inter, e_local)) return MoePath::kPerEntry;
  return MoePath::kPipeline;
}

inline bool is_moe_path(MoePath path) {
  return path == MoePath::kAuto || path == MoePath::kPipeline || path == MoePath::kPerEntry ||
         path == MoePath::kFusedDecode;
}

}  // namespace fp4kit::moe_impl
