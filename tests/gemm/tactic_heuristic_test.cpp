// The dense GEMM heuristic and the wgmma split-K rule (CPU only: pure functions of the shape and
// the SM count; the H100 measurements behind them are in docs/PERF.md, session 3).
#include <gtest/gtest.h>

#include <string>

#include "fp4kit/device.h"
#include "fp4kit/gemm.h"
#include "gemm/grouped.h"
#include "gemm/tactics.h"

namespace fp4kit::gemm_impl {
namespace {

constexpr int kSms = 132;

int find_tactic_id(const std::string& name) {
  for (const Tactic& t : tactic_table())
    if (t.name == name) return t.id;
  return -1;
}

// The tile-choice tests below see the tiles the shape rules choose: the two-stage-step mapping that
// follows them (wgmma_pair_step_tactic) is off inside them and tested on its own.
struct PairStepRuleOff {
  int before = wgmma_pair_step_rule().set(0);
  ~PairStepRuleOff() { wgmma_pair_step_rule().set(before); }
};

std::string pick(int64_t m, int64_t n, int64_t k) {
  GemmParams p;
  p.m = m, p.n = n, p.k = k;
  const Tactic* t = find_tactic(heuristic_tactic(p, kSms));
  return t ? t->name : "none";
}

TEST(WgmmaSplitK, OneWaveOfUnitsWithLongEnoughRanges) {
  EXPECT_EQ(wgmma_k_splits(64, 448, kSms), 2);   // 8192x28672 on 128-row tiles
  EXPECT_EQ(wgmma_k_splits(224, 64, kSms), 1);   // the tiles already fill the SMs
  EXPECT_EQ(wgmma_k_splits(1, 65, kSms), 16);    // capped at 16
  EXPECT_EQ(wgmma_k_splits(1, 40, kSms), 10);    // every range >= 4 chunks
  EXPECT_EQ(wgmma_k_splits(1, 3, kSms), 1);      // too short to split
  EXPECT_EQ(wgmma_k_splits(16, 64, kSms), 8);
}

// HBM-rich devices (H200: more DRAM bytes per SM than the H100) change a few small-M choices,
// each measured on the H200 (session 19, tactic sweep); every other point keeps the H100 rules.
TEST(GemmHeuristic, HbmRichDeviceRules) {
  PairStepRuleOff pairs_off;
  EXPECT_TRUE(hbm_rich(4915.0, 132));    // H200: 6144-bit bus at 3.2 GHz, 37 GB/s per SM
  EXPECT_FALSE(hbm_rich(3352.0, 132));   // H100 SXM: 25 GB/s per SM
  EXPECT_FALSE(hbm_rich(2039.0, 114));   // H100 PCIe
  EXPECT_FALSE(hbm_rich(0.0, 132));      // unknown bandwidth: the H100 rules
  EXPECT_FALSE(hbm_rich(4915.0, 0));
  auto pick_on = [](bool rich, int64_t m, int64_t n, int64_t k, bool w4a4) {
    GemmParams p;
    p.m = m, p.n = n, p.k = k;
    if (w4a4) p.a_dtype = DType::kE2M1x2;
    const Tactic* t = find_tactic(heuristic_tactic(p, kSms, rich));
    return t ? t->name : std::string("none");
  };
  for (bool w4a4 : {false, true}) {
    // 1..2 tokens with long warp K ranges (8192x28672): the rolling 16-row tile.
    EXPECT_EQ(pick_on(false, 1, 8192, 28672, w4a4), "decode_dp_m8_r32_u4");
    EXPECT_EQ(pick_on(true, 1, 8192, 28672, w4a4), "decode_dpr_m8_r16_u4");
    EXPECT_EQ(pick_on(true, 2, 8192, 28672, w4a4), "decode_dpr_m8_r16_u4");
    // Points the rich rules leave alone.
    EXPECT_EQ(pick_on(true, 1, 4096, 14336, w4a4), pick_on(false, 1, 4096, 14336, w4a4));
    EXPECT_EQ(pick_on(true, 1, 6144, 4096, w4a4), pick_on(false, 1, 6144, 4096, w4a4));
    if (!w4a4) EXPECT_EQ(pick_on(true, 8, 8192, 28672, w4a4), pick_on(false, 8, 8192, 28672, w4a4));
    EXPECT_EQ(pick_on(true, 16, 4096, 14336, w4a4), pick_on(false, 16, 4096, 14336, w4a4));
    EXPECT_EQ(pick_on(true, 64, 8192, 28672, w4a4), pick_on(false, 64, 8192, 28672, w4a4));
    if (!w4a4) EXPECT_EQ(pick_on(true, 3, 8192, 28672, w4a4), pick_on(false, 3, 8192, 28672, w4a4));  // (1..2 tokens only)
  }
  // W4A4 at 3..8 tokens on the 32-row tiles with 8 K slices of >= 16 chunks: the NVFP4 ring tile on the
  // H100 (measured there, session 23), the arranged tiles on HBM-rich devices (not measured there).
  for (int64_t m : {3, 5, 8}) {
    EXPECT_EQ(pick_on(false, m, 8192, 28672, true), "decode_dpfr_m8_r32_u4");
    EXPECT_EQ(pick_on(true, m, 8192, 28672, true), "decode_dpf_m8_r32_u4");
    EXPECT_EQ(pick_on(false, m, 8192, 8192, true), "decode_dpfr_m8_r32_u4");
  }
  // W4A16 8192x8192-like layers: the 32-row ring tile from 1 token on (H100: from 4).
  for (int64_t m : {1, 2, 3}) {
    EXPECT_EQ(pick_on(false, m, 8192, 8192, false), "decode_dpr_m8_r16_u4");
    EXPECT_EQ(pick_on(true, m, 8192, 8192, false), "decode_dpfr_m8_r32_u4");
  }
  EXPECT_EQ(pick_on(true, 2, 8192, 8192, true), pick_on(false, 2, 8192, 8192, true));  // (W4A4: no ring)
  // W4A4 gate_up-like layers (one warp per 16-row block) at 1..2 tokens: the rolling 32-row tile.
  EXPECT_EQ(pick_on(false, 1, 28672, 4096, true), "decode_dpr_m8_r16_u4");
  EXPECT_EQ(pick_on(true, 1, 28672, 4096, true), "decode_dpr_m8_r32_u4");
  EXPECT_EQ(pick_on(true, 2, 28672, 4096, true), "decode_dpr_m8_r32_u4");
  EXPECT_EQ(pick_on(true, 1, 28672, 4096, false), "decode_dpr_m8_r16_u4");  // (W4A16 keeps it)
  EXPECT_EQ(pick_on(true, 1, 131072, 4096, true), pick_on(false, 1, 131072, 4096, true));  // (> 1 wave: unmeasured)
  // W4A4 9..16 tokens with long warp K ranges: rolling 4-chunk groups.
  EXPECT_EQ(pick_on(false, 12, 8192, 28672, true), "decode_dpf_m16_r32_u2");
  EXPECT_EQ(pick_on(true, 12, 8192, 28672, true), "decode_dpfr_m16_r32_u4");
  EXPECT_EQ(pick_on(true, 16, 8192, 28672, true), "decode_dpfr_m16_r32_u4");
  EXPECT_EQ(pick_on(true, 16, 8192, 8192, true), "decode_dpf_m16_r32_u2");  // (16-chunk ranges)
  // ... only where the full wave would take 2-chunk groups (a short grid keeps its 4-chunk rule) and
  // only in W4A4 (W4A16 without the rings keeps its groups).
  EXPECT_EQ(pick_on(false, 16, 6144, 18432, true), "decode_dpf_m16_r32_u4");
  EXPECT_EQ(pick_on(true, 16, 6144, 18432, true), "decode_dpf_m16_r32_u4");
  EXPECT_EQ(pick_on(true, 16, 32768, 8192, false), pick_on(false, 16, 32768, 8192, false));
  EXPECT_EQ(pick_on(true, 16, 32768, 8192, true), "decode_dpfr_m16_r32_u4");
}

TEST(GemmHeuristic, FamilyAndTileByTokenCount) {
  PairStepRuleOff pairs_off;
  // M <= 8: data-parallel decode; 32-row blocks while their CTAs cover the SMs.
  EXPECT_EQ(pick(1, 8192, 28672), "decode_dp_m8_r32_u4");  // 16-row blocks: 112 chunks per warp
  EXPECT_EQ(pick(1, 6144, 4096), "decode_dp_m8_r32_u4");   // 16-row blocks: 1.5 waves
  EXPECT_EQ(pick(2, 6144, 4096), "decode_dp_m8_r32_u4");
  {  // W4A4 with A decoded in the GEMM (K <= 16384): the rolling 32-row tile; beyond, the plain one.
    GemmParams p;
    p.a_dtype = DType::kE2M1x2, p.m = 2, p.n = 6144, p.k = 4096;
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dpr_m8_r32_u4");
    p.m = 1, p.n = 8192, p.k = 28672;
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dp_m8_r32_u4");
    p.m = 1, p.n = 4096, p.k = 4096;  // (16-row rolling tile where it fits one wave, as W4A16)
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dpr_m8_r16_u4");
  }
  EXPECT_EQ(pick(4, 14336, 4096), "decode_dpr_m8_r16_u4");  // 16-row CTAs: one wave, 32 chunks per warp
  // 5 tokens: the dp tile for long K ranges, except in W4A16 where the fragment-order tile reads A
  // through the warps' rings (8 warps per row block; from 4 tokens on with long ranges or the
  // rolling 16-row tile).
  EXPECT_EQ(pick(5, 8192, 28672), "decode_dpfr_m8_r32_u4");
  EXPECT_EQ(pick(4, 8192, 28672), "decode_dpfr_m8_r32_u4");  // (ring, 3..4 tokens: rolling)
  EXPECT_EQ(pick(3, 8192, 28672), "decode_dpfr_m8_r32_u4");  // (session 18: rings from 3 tokens on)
  EXPECT_EQ(pick(3, 6144, 4096), "decode_dpf_m8_r16_u4");
  EXPECT_EQ(pick(4, 8192, 8192), "decode_dpfr_m8_r32_u4");  // (the 32-row ring tile from 4 tokens on)
  EXPECT_EQ(pick(4, 4096, 4096), "decode_dpfr_m8_r16_u4");
  EXPECT_EQ(pick(4, 6144, 4096), "decode_dpf_m8_r16_u4");  // (qkv: the 16-row ring tile, below)
  EXPECT_EQ(pick(5, 4096, 14336), "decode_dpfr_m8_r16_u4");
  EXPECT_EQ(pick(5, 8192, 8192), "decode_dpfr_m8_r32_u4");  // (W4A16 ring tile, below)
  EXPECT_EQ(pick(5, 6144, 4096), "decode_dpf_m8_r16_u4");  // 16-row ring tile: 384 CTAs, 8 warps each
  EXPECT_EQ(pick(3, 28672, 4096), "decode_dp_m8_r32_u4");  // rolling 16-row tile: 64 chunks per warp
  // 1..2 tokens: 16-row blocks with rolling load groups where those CTAs fit one wave.
  EXPECT_EQ(pick(1, 4096, 4096), "decode_dpr_m8_r16_u4");
  EXPECT_EQ(pick(1, 4096, 14336), "decode_dpr_m8_r16_u4");
  EXPECT_EQ(pick(2, 28672, 4096), "decode_dpr_m8_r16_u4");
  EXPECT_EQ(pick(1, 8192, 8192), "decode_dpr_m8_r16_u4");
  // ... and at 3..4 tokens in W4A16 where each warp streams <= 32 chunks (W4A4: fragment order, below).
  EXPECT_EQ(pick(3, 8192, 8192), "decode_dpr_m8_r16_u4");
  EXPECT_EQ(pick(4, 4096, 14336), "decode_dpfr_m8_r16_u4");  // (W4A16 ring, above)
  EXPECT_EQ(pick(3, 4096, 14336), "decode_dpfr_m8_r16_u4");  // (W4A16 ring from 3 tokens on)
  {
    GemmParams p;
    // W4A4 from 3 tokens on: the fragment-order tiles (the arrangement decodes A instead of the
    // staging kernel), whatever K — with BF16 output on 32-row tiles of 8 K slices of >= 16 chunks,
    // the rolling one on the NVFP4 ring (no arrangement).
    p.m = 4, p.n = 8192, p.k = 8192, p.a_dtype = DType::kE2M1x2;
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dpfr_m8_r32_u4");
    p.m = 3;
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dpfr_m8_r32_u4");
    p.d_dtype = DType::kFP16;  // (no NVFP4 ring kernel for FP16 output: the arranged tiles)
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dpfr_m8_r16_u4");
    p.d_dtype = DType::kBF16;
    p.m = 2;
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dpr_m8_r16_u4");
    p.m = 5, p.n = 8192, p.k = 28672;  // (W4A16: the dp tile, 56 chunks per warp)
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dpfr_m8_r32_u4");
    p.d_dtype = DType::kFP16;
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dpf_m8_r32_u4");
    p.d_dtype = DType::kBF16;
    p.m = 3, p.n = 28672, p.k = 4096;
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dpfr_m8_r32_u4");
    p.n = 4096;
    EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms))->name, "decode_dpfr_m8_r16_u4");
  }
  // 6..8 tokens: the same tiles on A in fragment order, rolling unless a warp's K range is long
  // (or, with 32-row blocks, short).
  // (8192x8192 in W4A16: the 32-row ring tile, 16 chunks per warp, instead of the arranged rolling
  // 16-row tile with 4 warps per row block, which W4A4 keeps)
  EXPECT_EQ(pick(8, 8192, 8192), "decode_dpfr_m8_r32_u4");
  EXPECT_EQ(pick(8, 8192, 4096), "decode_dpfr_m8_r16_u4");  // (8 chunks per warp on 32-row blocks)
  EXPECT_EQ(pick(8, 28672, 4096), "decode_dpfr_m8_r32_u4");  // (16-row: 64 chunks per warp)
  EXPECT_EQ(pick(6, 4096, 14336), "decode_dpfr_m8_r16_u4");
  EXPECT_EQ(pick(8, 8192, 28672), "decode_dpfr_m8_r32_u4");  // (ring: rolling, session 18)
  EXPECT_EQ(pick(7, 6144, 4096), "decode_dpf_m8_r16_u4");
  {
    GemmParams q;  // W4A4 (arranged A): the 32-row tile
    q.a_dtype = DType::kE2M1x2, q.m = 7, q.n = 6144, q.k = 4096;
    EXPECT_EQ(find_tactic(heuristic_tactic(q, kSms))->name, "decode_dpf_m8_r32_u4");
  }
  // 9..16: the dp decode family's 16-token tile on A in fragment order wherever its CTAs fill the
  // GPU (32-row blocks when those still cover the SMs, else 16-row blocks) ...
  // (W4A16 with 8 warps per row block — A through the warps' shared-memory rings — 4-chunk groups;
  // W4A4 2-chunk groups with a full wave)
  EXPECT_EQ(pick(16, 8192, 28672), "decode_dpfr_m16_r32_u4");  // (ring: rolling, session 18)
  EXPECT_EQ(pick(12, 8192, 8192), "decode_dpfr_m16_r32_u4");
  {
    GemmParams q;
    q.a_dtype = DType::kE2M1x2, q.m = 16, q.n = 8192, q.k = 28672;
    EXPECT_EQ(find_tactic(heuristic_tactic(q, kSms))->name, "decode_dpf_m16_r32_u2");
  }
  // (4-chunk load groups when the grid is short of one full wave of 2 CTAs per SM)
  EXPECT_EQ(pick(12, 28672, 4096), "decode_dpfr_m16_r32_u4");
  EXPECT_EQ(pick(16, 6144, 4096), "decode_dpfr_m16_r32_u4");
  EXPECT_EQ(pick(16, 4096, 14336), "decode_dpfr_m16_r16_u4");
  EXPECT_EQ(pick(9, 4096, 4096), "decode_dpfr_m16_r16_u4");
  // ... narrow layers: the dp tiles up to K = 14336 (session 46), from 9 tokens the 8-token tile in passes
  // (session 47), beyond K = 14336 the wgmma small tiles with split-K.
  EXPECT_EQ(pick(16, 1024, 4096), "decode_dpfr_m8_r16_u4");
  EXPECT_EQ(pick(9, 2048, 8192), "decode_dpfr_m8_r16_u4");
  EXPECT_EQ(pick(16, 2048, 14336), "decode_dpfr_m8_r16_u4");
  EXPECT_EQ(pick(8, 1024, 14336), "decode_dpfr_m8_r16_u4");
  EXPECT_EQ(pick(1, 1024, 4096), "decode_dpr_m8_r16_u4");
  EXPECT_EQ(pick(1, 512, 512), "decode_dpr_m8_r16_u4");
  {
    GemmParams w4a4;  // W4A4 likewise to K = 14336 (session 47)
    w4a4.m = 16, w4a4.n = 2048, w4a4.k = 14336, w4a4.a_dtype = DType::kE2M1x2;
    EXPECT_EQ(find_tactic(heuristic_tactic(w4a4, kSms))->name, "decode_dpfr_m8_r16_u4");
    w4a4.m = 1;
    EXPECT_EQ(find_tactic(heuristic_tactic(w4a4, kSms))->name, "decode_dpr_m8_r16_u4");
    w4a4.m = 16, w4a4.k = 28672;
    EXPECT_EQ(find_tactic(heuristic_tactic(w4a4, kSms))->name, "wgmma_w4a16_128x16_s8");
  }
  {
    const int before = decode_narrow_m8_rule().set(0);  // the 16-token tile at 9..16, wgmma at 17..32
    EXPECT_EQ(pick(16, 1024, 4096), "decode_dpfr_m16_r16_u4");
    EXPECT_EQ(pick(20, 1024, 4096), "wgmma_w4a16_128x24_s8");
    const int dp_before = decode_narrow_dp_rule().set(0);
    EXPECT_EQ(pick(16, 1024, 4096), "decode_m16_r32_u2");
    decode_narrow_dp_rule().set(dp_before);
    decode_narrow_m8_rule().set(before);
  }
  EXPECT_EQ(pick(16, 1024, 28672), "wgmma_w4a16_128x16_s8");
  // 17..32: small token tiles; 256 rows when the K ranges stay long ...
  EXPECT_EQ(pick(32, 28672, 4096), "wgmma_w4a16_256x32_s8");
  EXPECT_EQ(pick(25, 4096, 14336), "wgmma_w4a16_128x32_s8");
  auto pick_w4a4 = [](int64_t m, int64_t n, int64_t k) {
    GemmParams q;
    q.a_dtype = DType::kE2M1x2, q.m = m, q.n = n, q.k = k;
    return find_tactic(heuristic_tactic(q, kSms))->name;
  };
  const int r32_before = decode_m24_r32_rule().set(0);  // 17..24 before session 42: the wgmma 24-token tiles
  EXPECT_EQ(pick(17, 8192, 8192), "wgmma_w4a16_128x24_s8");
  EXPECT_EQ(pick(24, 8192, 28672), "wgmma_w4a16_256x24_s8");
  EXPECT_EQ(pick(24, 6144, 4096), "wgmma_w4a16_128x24_s8");
  EXPECT_EQ(pick_w4a4(20, 28672, 4096), "wgmma_w4a16_256x24_s8");
  decode_m24_r32_rule().set(-1);
  // ... since then, on layers of N·K > 16 Mi, the 32-row 24-token decode tile where its CTAs fill >= 70 %
  // of one wave: W4A16 with 8 warps per row block (A through the warps' rings) of <= 32 chunks each, W4A4
  // at any warp count and K.
  for (int64_t m : {17, 20, 24}) {
    EXPECT_EQ(pick(m, 8192, 8192), "decode_dpfr_m24_r32_u2") << m;
    EXPECT_EQ(pick(m, 8192, 28672), "wgmma_w4a16_256x24_s8") << m;  // 56 chunks per warp
    EXPECT_EQ(pick_w4a4(m, 8192, 28672), "decode_dpfr_m24_r32_u2") << m;
    EXPECT_EQ(pick(m, 6144, 4096), "decode_dpfr_m24_r32_u2") << m;  // 192 CTAs: 73 % of a wave
    EXPECT_EQ(pick_w4a4(m, 6144, 4096), "decode_dpfr_m24_r32_u2") << m;
    EXPECT_EQ(pick(m, 28672, 4096), "wgmma_w4a16_256x24_s8") << m;  // 2 warps per row block
    EXPECT_EQ(pick_w4a4(m, 28672, 4096), "decode_dpfr_m24_r32_u2") << m;
  }
  EXPECT_EQ(pick(20, 2560, 8192), "wgmma_w4a16_128x24_s8");  // 80 CTAs: 30 %
  EXPECT_EQ(pick(20, 4608, 4096), "wgmma_w4a16_128x24_s8");  // 144 CTAs: 55 %
  EXPECT_EQ(pick_w4a4(20, 2560, 8192), "wgmma_w4a16_128x24_s8");
  EXPECT_EQ(pick_w4a4(20, 4608, 4096), "wgmma_w4a16_128x24_s8");
  // ... or, where the 16-row dp CTAs of 8 warps fill 90..100 % of one wave, the 24-token decode tile
  // (down, o), in both modes.
  const int m24_before = decode_m24_rule().set(-1);  // the default, whatever FP4KIT_DECODE_M24 says
  for (int64_t m : {17, 20, 24}) {
    EXPECT_EQ(pick(m, 4096, 14336), "decode_dpfr_m24_r16_u4") << m;
    EXPECT_EQ(pick(m, 4096, 4096), "decode_dpfr_m24_r16_u4") << m;
    EXPECT_EQ(pick(m, 3840, 4096), "decode_dpfr_m24_r16_u4") << m;  // 240 CTAs: 91 % of a wave
  }
  // Narrower layers (fewer CTAs) keep their rules: narrow ones take the 8-token tile in passes (session 47).
  EXPECT_EQ(pick(20, 1024, 4096), "decode_dpfr_m8_r16_u4");
  EXPECT_EQ(pick(32, 4096, 1024), "decode_dpfr_m8_r16_u4");
  EXPECT_EQ(pick(32, 1024, 28672), "wgmma_w4a16_128x32_s8");  // K > 14336: wgmma
  // 17..32 past N·K = 16 Mi where the 16-row 16-token tile's passes fit one wave (session 49): W4A16 rolling,
  // W4A4 plain.
  for (int64_t m : {17, 24, 32}) {
    EXPECT_EQ(pick(m, 2048, 14336), "decode_dpfr_m16_r16_u4") << m;
    EXPECT_EQ(pick_w4a4(m, 2048, 14336), "decode_dpf_m16_r16_u4") << m;
    EXPECT_EQ(pick(m, 1536, 12288), "decode_dpfr_m16_r16_u4") << m;
  }
  EXPECT_EQ(pick(32, 4096, 14336), "wgmma_w4a16_128x32_s8");  // 512 CTAs: two waves
  EXPECT_EQ(pick(32, 2048, 16384), "wgmma_w4a16_128x32_s8");  // K > 14336
  // 33..64 on narrow layers with K >= 2048: the smallest dp token tile whose passes fit one wave (264 CTAs).
  EXPECT_EQ(pick(64, 1024, 4096), "decode_dpfr_m16_r16_u4");   // 64 CTAs a pass, 4 passes
  EXPECT_EQ(pick(40, 2048, 8192), "decode_dpfr_m24_r16_u4");   // 128 CTAs a pass: 2 passes of 24 tokens
  EXPECT_EQ(pick(64, 2048, 8192), "decode_dpfr_m16_r32_u4");   // 3 passes of 24 would not fit: 32-row blocks
  EXPECT_EQ(pick(64, 4096, 1024), "wgmma_w4a16_128x32_s8");  // short K keeps wgmma (pair steps off here)
  EXPECT_EQ(pick(64, 4096, 4096), "wgmma_w4a16_128x32_s8");       // not narrow
  EXPECT_EQ(pick_w4a4(64, 1024, 4096), "decode_dpfr_m16_r16_u4");  // W4A4 too (session 49)
  EXPECT_EQ(pick_w4a4(40, 3072, 3072), "decode_dpfr_m24_r16_u4");  // W4A4 at any width (session 49) ...
  EXPECT_EQ(pick(40, 3072, 3072), "wgmma_w4a16_128x24_s8");         // ... W4A16 to 2048 rows
  EXPECT_EQ(pick(64, 4096, 2048), "wgmma_w4a16_128x32_s8");
  EXPECT_EQ(pick(64, 2048, 2048), "decode_dpfr_m16_r16_u4");
  EXPECT_EQ(pick(20, 2048, 8192), "decode_dpfr_m16_r16_u4");  // two passes
  EXPECT_EQ(pick(20, 3584, 4096), "decode_dpf_m16_r32_u4");   // 224 CTAs: 85 %
  decode_m24_rule().set(0);  // the rule before: wgmma / two 16-token passes (down's 128 32-row CTAs: 48 %)
  EXPECT_EQ(pick(17, 4096, 14336), "wgmma_w4a16_128x24_s8");
  EXPECT_EQ(pick(24, 4096, 4096), "decode_dpf_m16_r32_u2");
  decode_m24_rule().set(m24_before);
  decode_m24_r32_rule().set(r32_before);
  // ... and on small layers (N·K <= 16 Mi) otherwise two passes of the 16-token dp tile.
  EXPECT_EQ(pick(25, 4096, 4096), "decode_dpf_m16_r32_u2");
  EXPECT_EQ(pick(32, 4096, 4096), "decode_dpf_m16_r32_u2");
  EXPECT_EQ(pick(32, 6144, 4096), "wgmma_w4a16_128x32_s8");
  // 33..48: two passes of the 32-row 24-token dp tile where they fill 90..100 % of one wave with 8 warps per
  // row block of <= 32 chunks, on layers of N·K <= 16 Mi (session 49: o).
  for (int64_t m : {33, 40, 48}) {
    EXPECT_EQ(pick(m, 4096, 4096), "decode_dpfr_m24_r32_u2") << m;
    EXPECT_EQ(pick_w4a4(m, 4096, 4096), "decode_dpfr_m24_r32_u2") << m;
  }
  EXPECT_EQ(pick(40, 6144, 4096), "wgmma_w4a16_128x48_s8");   // 384 CTAs: past one wave
  EXPECT_EQ(pick(40, 8192, 28672), "wgmma_w4a16_128x48_s8");  // 56 chunks per warp
  EXPECT_EQ(pick(40, 4096, 2048), "wgmma_w4a16_128x24_s8");   // 4 warps per row block
  EXPECT_EQ(pick(56, 4096, 4096), "wgmma_w4a16_128x32_s8");
  EXPECT_EQ(pick(40, 4096, 8192), "wgmma_w4a16_128x48_s8");   // N·K > 16 Mi: unmeasured
  EXPECT_EQ(pick(40, 3072, 4096), "wgmma_w4a16_128x24_s8");   // 192 CTAs: 73 %
  // 33..48 on narrow layers past 16 Mi that the dp rules leave: one pass of 128x64, fitted (session 49).
  EXPECT_EQ(pick(48, 2048, 14336), "wgmma_w4a16_128x48_s8");
  EXPECT_EQ(pick(40, 1024, 28672), "wgmma_w4a16_128x48_s8");
  EXPECT_EQ(pick(64, 2048, 14336), "wgmma_w4a16_128x32_s8");  // 49..64: unmeasured, two passes
  {
    const int mid_before = decode_mid_m_rule().set(0), one_before = wgmma_narrow_one_pass_rule().set(0);
    EXPECT_EQ(pick(24, 2048, 14336), "wgmma_w4a16_128x24_s8");
    EXPECT_EQ(pick(40, 4096, 4096), "wgmma_w4a16_128x24_s8");
    EXPECT_EQ(pick(48, 2048, 14336), "wgmma_w4a16_128x24_s8");
    EXPECT_EQ(pick(40, 3072, 3072), "decode_dpfr_m24_r16_u4");
    EXPECT_EQ(pick_w4a4(40, 3072, 3072), "wgmma_w4a16_128x24_s8");
    decode_mid_m_rule().set(mid_before), wgmma_narrow_one_pass_rule().set(one_before);
  }
  // 33..64: 128x64 unless its split K ranges get short (< 32 chunks).
  EXPECT_EQ(pick(64, 8192, 28672), "wgmma_w4a16_128x64_s6");
  EXPECT_EQ(pick(64, 6144, 4096), "wgmma_w4a16_128x64_s6");   // 2 splits of 32 chunks
  EXPECT_EQ(pick(64, 4096, 4096), "wgmma_w4a16_128x32_s8");   // 128x64: 4 splits of 16
  // ... and 256x64 when its tiles fit one wave where 128x64's need two (wide layers).
  EXPECT_EQ(pick(48, 28672, 4096), "wgmma_w4a16_256x48_s8");  // 33..48: the 48-token tile
  EXPECT_EQ(pick(64, 28672, 4096), "wgmma_w4a16_256x64_s8");
  EXPECT_EQ(pick(64, 8192, 8192), "wgmma_w4a16_128x64_s6");
  EXPECT_EQ(pick(40, 8192, 8192), "wgmma_w4a16_128x48_s8");
  EXPECT_EQ(pick(33, 8192, 28672), "wgmma_w4a16_128x48_s8");
  // 65..128: 128x128 s6 with at most 2 K splits of >= 32 chunks, else the full-wave model.
  EXPECT_EQ(pick(128, 8192, 28672), "wgmma_w4a16_128x128_s6");
  EXPECT_EQ(pick(96, 8192, 8192), "wgmma_w4a16_128x96_s6");   // 65..96: the 96-token tile
  EXPECT_EQ(pick(96, 6144, 4096), "wgmma_w4a16_128x96_s6");
  // ... also with 4 splits of >= 32 chunks (session 39): one pass of the fitted tile on down.
  EXPECT_EQ(pick(96, 4096, 14336), "wgmma_w4a16_128x96_s6");
  EXPECT_EQ(pick(72, 4096, 14336), "wgmma_w4a16_128x80_s6");
  EXPECT_EQ(pick(128, 4096, 14336), "wgmma_w4a16_128x128_s6");
  EXPECT_EQ(pick(96, 4096, 4096), "wgmma_w4a16_128x48_s8");  // 4 splits of 16 chunks: the model, 2 x 48
  EXPECT_EQ(pick(80, 28672, 4096), "wgmma_w4a16_256x80_s6");   // 65..80: 80 tokens
  EXPECT_EQ(pick(112, 8192, 28672), "wgmma_w4a16_128x112_s6");  // 97..112: 112 tokens
  EXPECT_EQ(pick(128, 28672, 4096), "wgmma_w4a16_256x128_s4");
  // 129..256 with SMs to spare: 128x256 when 2 splits of >= 64 chunks fill them, else 128x128 s6.
  EXPECT_EQ(pick(192, 8192, 28672), "wgmma_w4a16_128x192_s4");  // 129..224: 144 / 160 / 192 / 224 tokens
  EXPECT_EQ(pick(150, 8192, 28672), "wgmma_w4a16_128x160_s4");
  EXPECT_EQ(pick(240, 8192, 28672), "wgmma_w4a16_128x256_s4");
  EXPECT_EQ(pick(256, 8192, 8192), "wgmma_w4a16_128x256_s4");
  EXPECT_EQ(pick(256, 4096, 14336), "wgmma_w4a16_128x128_s6");
  EXPECT_EQ(pick(192, 6144, 4096), "wgmma_w4a16_128x192_s4");   // up to 224: one fitted tile, 2 splits
  EXPECT_EQ(pick(256, 6144, 4096), "wgmma_w4a16_128x128_s6");
  EXPECT_EQ(pick(160, 4096, 14336), "wgmma_w4a16_128x80_s6");   // 4 splits: two tiles, of 80
  EXPECT_EQ(pick(144, 4096, 4096), "wgmma_w4a16_128x80_s6");
  EXPECT_EQ(pick(192, 4096, 4096), "wgmma_w4a16_128x96_s6");
  EXPECT_EQ(pick(200, 4096, 4096), "wgmma_w4a16_128x112_s6");
  EXPECT_EQ(pick(225, 4096, 4096), "wgmma_w4a16_128x128_s6");  // 2 x 113: no narrower tile
  {
    const int before = decode_mid_m_rule().set(0);  // (since session 49 the dp tiles take it)
    EXPECT_EQ(pick(48, 4096, 4096), "wgmma_w4a16_128x24_s8");     // 128x32 twice: 2 x 24
    decode_mid_m_rule().set(before);
  }
  EXPECT_EQ(pick(256, 28672, 4096).rfind("wgmma_w4a16_", 0), 0u);  // full waves: the model
  // Above 256: the split-aware model with the 144..224-token tiles (the measured-fastest of ten
  // tactics at each of these points, H100 session 13), without the split tails (below).
  const int split_tail_before = wgmma_split_tail_rule().set(0);
  EXPECT_EQ(pick(320, 8192, 28672), "wgmma_w4a16_128x160_s4");
  EXPECT_EQ(pick(384, 8192, 8192), "wgmma_w4a16_128x192_s4");
  EXPECT_EQ(pick(448, 28672, 4096), "wgmma_w4a16_128x224_s4");
  EXPECT_EQ(pick(640, 8192, 28672), "wgmma_w4a16_128x160_s4");
  EXPECT_EQ(pick(768, 4096, 14336), "wgmma_w4a16_128x192_s4");
  EXPECT_EQ(pick(1280, 28672, 4096), "wgmma_w4a16_128x256_s4");
  EXPECT_EQ(pick(4096, 8192, 28672), "wgmma_w4a16_128x256_s4");
  wgmma_split_tail_rule().set(split_tail_before);
  // Boundaries of the fitted token tiles.
  EXPECT_EQ(pick(49, 8192, 8192), "wgmma_w4a16_128x64_s6");
  EXPECT_EQ(pick(113, 8192, 28672), "wgmma_w4a16_128x128_s6");
  EXPECT_EQ(pick(224, 8192, 28672), "wgmma_w4a16_128x224_s4");
  EXPECT_EQ(pick(225, 8192, 28672), "wgmma_w4a16_128x256_s4");
  // Large M: full-wave tiles, no small ones.
  const std::string big = pick(4096, 8192, 8192);
  EXPECT_EQ(big.rfind("wgmma_", 0), 0u) << big;
  EXPECT_EQ(big.find("x16_"), std::string::npos) << big;
  EXPECT_EQ(big.find("x32_"), std::string::npos) << big;
}

// Split tail: whole tiles in full waves of the (even) grid, then a tail of at most half a wave whose
// tiles split K in two (halves of >= 4 chunks).
TEST(WgmmaSplitTail, FullWavesThenAtMostHalfAWave) {
  EXPECT_EQ(wgmma_split_tail_dp_tiles(448, 64, 132), 396);  // gate_up M = 512 on 128x256: 3 waves + 52
  EXPECT_EQ(wgmma_split_tail_dp_tiles(198, 64, 132), 132);  // a tail of exactly half a wave
  EXPECT_EQ(wgmma_split_tail_dp_tiles(199, 64, 132), -1);
  EXPECT_EQ(wgmma_split_tail_dp_tiles(224, 64, 132), -1);   // gate_up M = 256: a tail of 92
  EXPECT_EQ(wgmma_split_tail_dp_tiles(264, 64, 132), -1);   // no tail
  EXPECT_EQ(wgmma_split_tail_dp_tiles(100, 64, 132), -1);   // under one wave (split-K's case)
  EXPECT_EQ(wgmma_split_tail_dp_tiles(150, 7, 132), -1);    // halves under 4 chunks
  EXPECT_EQ(wgmma_split_tail_dp_tiles(150, 8, 132), 132);
  EXPECT_EQ(wgmma_split_tail_dp_tiles(150, 64, 131), -1);   // clusters of 2 need an even grid
  int st = 0;
  for (const Tactic& t : tactic_table()) {
    if (!t.split_tail) continue;
    ++st;
    EXPECT_TRUE(t.family == Family::kWgmma && !t.stream_k) << t.name;
    EXPECT_EQ(t.name.substr(t.name.size() - 3), "_st");
    // WgCfg::kClusterReduce: the FP32 tile fits in the pipeline stages (A box + weight and scale chunks).
    const int64_t stage_bytes = t.block_m * 128 + t.block_n / 16 * (512 + 64);
    EXPECT_GE(t.stages * stage_bytes, int64_t(t.block_n) * t.block_m * 4) << t.name;
  }
  EXPECT_EQ(st, 9);
}

// Short K: a 4- or 8-way split whose clusters do not all fit is halved while the halved one fits (H100 with one
// 384-thread CTA per SM: 66 clusters of 2, 30 of 4, 15 of 8 resident).
TEST(WgmmaShortKSplits, HalvedWhileTheClustersDoNotFit) {
  const auto h100 = [](int c) -> int64_t { return c == 2 ? 66 : c == 4 ? 30 : c == 8 ? 15 : 0; };
  EXPECT_EQ(wgmma_short_k_splits(4, 32, 16, 132, h100), 2);  // 4096x1024 M = 24 on 128x24: 128 CTAs > 120
  EXPECT_EQ(wgmma_short_k_splits(4, 16, 16, 132, h100), 4);  // 64 CTAs in 16 clusters of 4 fit
  EXPECT_EQ(wgmma_short_k_splits(8, 16, 32, 132, h100), 4);  // 2048x2048 M = 24: 8 -> 4 (16 clusters of 4 fit)
  EXPECT_EQ(wgmma_short_k_splits(8, 16, 33, 132, h100), 8);  // longer K: unchanged
  EXPECT_EQ(wgmma_short_k_splits(2, 66, 16, 132, h100), 2);  // 2-way: unchanged
  EXPECT_EQ(wgmma_short_k_splits(4, 40, 16, 132, h100), 4);  // more CTAs than SMs: not a one-wave split
  EXPECT_EQ(wgmma_short_k_splits(4, 32, 16, 132, [](int) -> int64_t { return 0; }), 4);  // residency unknown
  EXPECT_EQ(wgmma_short_k_splits(8, 16, 32, 132, [](int c) -> int64_t { return c == 8 ? 16 : 0; }), 8);  // 8s fit
}

// Above 256 tokens the wave model takes a tile's split tail where its last wave is at most half full and
// (1 + tail) waves at kSplitTailWave beat the other tiles' whole waves (H100 session 40 run 1, graph us,
// W4A16: gate_up M = 288..512 -3..-9 %, qkv M = 768 / 1024 -8 / -6 %); qkv M = 640 keeps 256x128 (its
// 128x160 split tail: W4A16 +9.0 % eager, -1.5 % graph; W4A4 +0.8 / +2.3 %).
// FP4KIT_WGMMA_SPLIT_TAIL=0: never.
TEST(GemmHeuristic, SplitTailRule) {
  const int before = wgmma_split_tail_rule().set(-1);
  EXPECT_EQ(pick(288, 28672, 4096), "wgmma_w4a16_128x144_s4_st");
  EXPECT_EQ(pick(384, 28672, 4096), "wgmma_w4a16_128x192_s4_st");
  EXPECT_EQ(pick(512, 28672, 4096), "wgmma_w4a16_128x256_s4_st");
  EXPECT_EQ(pick(1024, 6144, 4096), "wgmma_w4a16_128x256_s4_st");
  EXPECT_EQ(pick(768, 6144, 4096), "wgmma_w4a16_128x192_s4_st");
  EXPECT_EQ(pick(640, 6144, 4096), "wgmma_w4a16_256x128_s4");
  EXPECT_EQ(pick(1280, 8192, 28672), "wgmma_w4a16_128x256_s4_st");
  EXPECT_EQ(pick(1024, 28672, 4096), "wgmma_w4a16_128x256_s4");  // a tail of 104 tiles: too long
  EXPECT_EQ(pick(256, 28672, 4096), "wgmma_w4a16_128x256_s4");   // <= 256 tokens: the older model
  EXPECT_EQ(pick(1536, 8192, 8192), "wgmma_w4a16_128x256_s4");
  wgmma_split_tail_rule().set(0);
  EXPECT_EQ(pick(512, 28672, 4096), "wgmma_w4a16_128x256_s4");
  EXPECT_EQ(pick(1024, 6144, 4096), "wgmma_w4a16_128x224_s4");
  wgmma_split_tail_rule().set(before);
  const int base = find_tactic_id("wgmma_w4a16_128x192_s4");
  EXPECT_EQ(without_split_tail(find_tactic_id("wgmma_w4a16_128x192_s4_st")), base);
  EXPECT_EQ(without_split_tail(base), base);
}

TEST(GemmHeuristic, FourSplitOnePassOverride) {
  PairStepRuleOff pairs_off;
  // FP4KIT_WGMMA_4SPLIT_ONE_PASS=0: the rule before session 39 (at most 2 K splits for 128x128 at
  // 65..128 tokens; down took two passes of the model's 128x48 / 128x64).
  const int before = wgmma_four_split_one_pass().set(0);
  EXPECT_EQ(pick(96, 4096, 14336), "wgmma_w4a16_128x48_s8");
  EXPECT_EQ(pick(128, 4096, 14336), "wgmma_w4a16_128x64_s6");
  EXPECT_EQ(pick(96, 8192, 8192), "wgmma_w4a16_128x96_s6");  // 2 splits: unchanged
  wgmma_four_split_one_pass().set(1);
  EXPECT_EQ(pick(96, 4096, 14336), "wgmma_w4a16_128x96_s6");
  wgmma_four_split_one_pass().set(before);
}

// Session 43: the 128-row tiles of 24..64 tokens take two stages per consumer step, with 8 stages where
// a split-K unit covers at most 32 chunks of K and 12 beyond (H100 run 2); 256-row tiles, the HBM-rich
// rules and FP4KIT_WGMMA_PAIRS=0 keep one stage per step.
TEST(GemmHeuristic, TwoStageStepsOnTheSmallTokenTiles) {
  EXPECT_EQ(pick(64, 4096, 4096), "wgmma_w4a16_128x32_s8_k128");    // o: two passes, 32 chunks per unit
  EXPECT_EQ(pick(96, 4096, 4096), "wgmma_w4a16_128x48_s8_k128");
  EXPECT_EQ(pick(48, 6144, 4096), "wgmma_w4a16_128x48_s8_k128");    // qkv: one pass, 2 splits of 32
  EXPECT_EQ(pick(32, 8192, 8192), "wgmma_w4a16_128x32_s12_k128");   // 2 splits of 64 chunks
  EXPECT_EQ(pick(48, 8192, 28672), "wgmma_w4a16_128x48_s12_k128");
  EXPECT_EQ(pick(64, 4096, 14336), "wgmma_w4a16_128x64_s12_k128");  // down: 4 splits of 56
  // 256-row tiles of 24 / 32 tokens: 128 rows with pairs where those tiles fit one wave with 64..128-chunk units.
  EXPECT_EQ(pick(25, 8192, 16384), "wgmma_w4a16_128x32_s12_k128");   // 64 tiles, 2 splits of 128
  EXPECT_EQ(pick(24, 16384, 8192), "wgmma_w4a16_128x24_s12_k128");   // 128 tiles, 128 chunks, no split
  EXPECT_EQ(pick(32, 8192, 28672), "wgmma_w4a16_256x32_s8");          // 64 tiles, 2 splits of 224 chunks
  EXPECT_EQ(pick(24, 8192, 28672), "wgmma_w4a16_256x24_s8");
  EXPECT_EQ(pick(32, 16384, 16384), "wgmma_w4a16_256x32_s8");         // 128 tiles, 256 chunks
  EXPECT_EQ(pick(32, 28672, 4096), "wgmma_w4a16_256x32_s8");          // gate_up: 224 tiles of 128, two waves
  EXPECT_EQ(pick(20, 28672, 4096), "wgmma_w4a16_256x24_s8");
  EXPECT_EQ(pick(48, 28672, 4096), "wgmma_w4a16_256x48_s8");          // 48 / 64 tokens unchanged
  EXPECT_EQ(pick(96, 8192, 8192), "wgmma_w4a16_128x96_s6");         // wider token tiles unchanged
  EXPECT_EQ(pick(48, 2048, 1024), "wgmma_w4a16_128x24_s8");         // 4 chunks per unit: one stage
  GemmParams p;
  p.m = 64, p.n = 4096, p.k = 4096;
  EXPECT_EQ(find_tactic(heuristic_tactic(p, kSms, true))->name, "wgmma_w4a16_128x32_s8_k128");  // HBM-rich too
  GemmParams wide_k;
  wide_k.m = 32, wide_k.n = 8192, wide_k.k = 28672;
  EXPECT_EQ(find_tactic(heuristic_tactic(wide_k, kSms, true))->name, "wgmma_w4a16_256x32_s8");
  {
    PairStepRuleOff off;
    EXPECT_EQ(pick(64, 4096, 4096), "wgmma_w4a16_128x32_s8");
    EXPECT_EQ(pick(32, 8192, 8192), "wgmma_w4a16_128x32_s8");
  }
  // A tuned two-stage tactic keeps its step and ring when fit_token_tile narrows it (32 -> 24, 64 -> 48).
  int pairs = 0;
  for (const Tactic& t : tactic_table()) {
    if (t.step_chunks != 2) continue;
    ++pairs;
    EXPECT_TRUE(t.family == Family::kWgmma && t.block_n == 128 && t.block_m <= 64 && !t.stream_k && !t.split_tail);
    EXPECT_NE(t.name.find("_k128"), std::string::npos);
    if (t.block_m == 32 || t.block_m == 64) {
      const Tactic* f = find_tactic(fit_token_tile(t.id, t.block_m * 3 / 4 - 4));
      EXPECT_TRUE(f->block_m == t.block_m * 3 / 4 && f->step_chunks == 2 && f->stages == t.stages) << f->name;
    }
  }
  EXPECT_EQ(pairs, 8);
  // Every one-stage 128-row tile of 24..64 tokens maps to its own tile's pair, whatever the ring
  // (p: o at M = 64, 32 chunks per unit on every such tile).
  for (const Tactic& t : tactic_table()) {
    if (t.family != Family::kWgmma || t.step_chunks != 1 || t.stream_k || t.split_tail || t.block_n != 128 ||
        t.block_m < 24 || t.block_m > 64)
      continue;
    const Tactic* q = find_tactic(wgmma_pair_step_tactic(t.id, p, kSms));
    EXPECT_TRUE(q->step_chunks == 2 && q->block_m == t.block_m && q->block_n == 128) << t.name << " -> " << q->name;
  }
}

// Dense dp warps per row block: halved only while the CTAs stay >= 1.5 per SM.
TEST(DenseDpSchedule, LongerStreamsOnlyForVeryWideShortKLayers) {
  EXPECT_EQ(dense_dp_warps_per_row_block(28672 / 32, 4096 / 64, kSms), 2);  // llama8b.gate_up
  EXPECT_EQ(dense_dp_warps_per_row_block(6144 / 32, 4096 / 64, kSms), 8);   // qkv
  EXPECT_EQ(dense_dp_warps_per_row_block(8192 / 32, 8192 / 64, kSms), 8);
  EXPECT_EQ(dense_dp_warps_per_row_block(8192 / 32, 28672 / 64, kSms), 8);
  EXPECT_EQ(dense_dp_warps_per_row_block(4096 / 16, 14336 / 64, kSms), 8);   // down, 16-row blocks
  EXPECT_EQ(dense_dp_warps_per_row_block(64, 512 / 64, kSms), 1);            // K-only rule: 8 chunks
}

// Rolling load groups by the length of each warp's K range (tactics.h, decode_roll).
TEST(DecodeRoll, ByTokenTileRowsAndChunksPerWarp) {
  EXPECT_TRUE(decode_roll(1, 1, 8));     // o, 16-row blocks
  EXPECT_TRUE(decode_roll(1, 1, 28));    // down
  EXPECT_FALSE(decode_roll(1, 1, 112));  // 8192x28672, 16-row blocks
  EXPECT_FALSE(decode_roll(1, 2, 8));    // qkv, 32-row blocks
  EXPECT_TRUE(decode_roll(1, 2, 16));    // 8192x8192
  EXPECT_TRUE(decode_roll(1, 2, 32));    // gate_up
  EXPECT_FALSE(decode_roll(1, 2, 56));   // 8192x28672
  EXPECT_TRUE(decode_roll(2, 1, 8));     // o at 16 tokens
  EXPECT_FALSE(decode_roll(2, 1, 28));   // down at 16 tokens
  EXPECT_TRUE(decode_roll(2, 2, 32));    // gate_up at 16 tokens
  EXPECT_FALSE(decode_roll(2, 2, 8));
  // Every rolling tactic is a dense dp tile with an even load group.
  int rolling = 0;
  for (const Tactic& t : tactic_table()) {
    if (!t.roll) continue;
    ++rolling;
    EXPECT_TRUE(t.family == Family::kDecode && t.dp && t.unroll % 2 == 0) << t.name;
    EXPECT_NE(t.name.find(t.frag_a ? "decode_dpfr_m" : "decode_dpr_m"), std::string::npos) << t.name;
  }
  EXPECT_EQ(rolling, 8);
}

// The L2 prefetch before the PDL wait goes only to dp decode warps that wait for a staging kernel of
// ours: W4A4 behind stage_activations (with PDL), and the 8-token fragment-order tiles.
TEST(DecodeL2Prefetch, OnlyBehindOurOwnStagingKernel) {
  int seen_m8 = 0, seen_m16 = 0;
  for (const Tactic& t : tactic_table()) {
    const int w4a16 = decode_l2_prefetch_chunks(t, DType::kBF16, true);
    const int w4a4 = decode_l2_prefetch_chunks(t, DType::kE2M1x2, true);
    const int w4a4_no_pdl = decode_l2_prefetch_chunks(t, DType::kE2M1x2, false);
    SCOPED_TRACE(t.name);
    if (t.family != Family::kDecode || !t.dp) {
      EXPECT_EQ(w4a16 + w4a4 + w4a4_no_pdl, 0);
    } else if (t.frag_a) {
      const int want = t.nt == 1 ? 8 : 0;  // 16-token tiles lost with it (docs/PERF.md session 14)
      EXPECT_EQ(w4a16, want);
      EXPECT_EQ(w4a4, want);
      EXPECT_EQ(w4a4_no_pdl, want);  // the arrangement kernel always runs the GEMM under PDL
      (t.nt == 1 ? seen_m8 : seen_m16) += 1;
    } else {
      EXPECT_EQ(w4a16, 0);
      EXPECT_EQ(w4a4, 8);
      EXPECT_EQ(w4a4_no_pdl, 0);
    }
  }
  EXPECT_GT(seen_m8, 0);
  EXPECT_GT(seen_m16, 0);
}

// The grouped dp warps-per-row-block model against the H100 MoE sweeps of session 5 (docs/PERF.md):
// the measured best kw of FC1 / FC2 at T = 8 and 16 (k = 8, 3 CTAs/SM, 4-chunk load groups).
TEST(GroupedDpSchedule, PicksTheMeasuredBestWarpsPerRowBlock) {
  auto kw = [](int64_t experts, int64_t t, int64_t n, int64_t k) {
    return grouped_dp_warps_per_row_block(experts, t * 8, (n + 31) / 32, (k + 63) / 64, 4, kSms, 3);
  };
  // Qwen3.6-35B-A3B (E = 256, H = 2048, I = 512): FC1 [1024 x 2048], FC2 [2048 x 512].
  EXPECT_EQ(kw(256, 8, 1024, 2048), 1);   // 61.9 us vs 63.7 (kw 4), 67.5 (2), 65.1 (8)
  EXPECT_EQ(kw(256, 16, 1024, 2048), 2);  // 91.8 vs 91.5 (4), 98.1 (1), 100.7 (8)
  EXPECT_EQ(kw(256, 8, 2048, 512), 1);    // FC2: kw 2 63.1 vs 63.7 (1), kw 4 74.1
  EXPECT_EQ(kw(256, 16, 2048, 512), 1);   // 91.5 vs 95.3 (2)
  // Qwen3-30B-A3B (E = 128, H = 2048, I = 768).
  EXPECT_EQ(kw(128, 8, 1536, 2048), 1);   // 69.0 vs 71.4 (2), 73.5 (4)
  EXPECT_EQ(kw(128, 16, 1536, 2048), 2);  // 102.8 vs 109.3 (4), 112.4 (1)
  EXPECT_EQ(kw(128, 8, 2048, 768), 1);    // 73.5 vs 76.7 (2)
  EXPECT_EQ(kw(128, 16, 2048, 768), 1);   // 109.3 vs 119.5 (2)
  // fi-256 (E = 256, H = 7168, I = 256): FC1 [512 x 7168], FC2 [7168 x 256].
  EXPECT_EQ(kw(256, 8, 512, 7168), 2);    // 87.3 vs 91.2 (8), 107.0 (1)
  EXPECT_EQ(kw(256, 16, 512, 7168), 8);   // 154.0 vs 165.7 (1), 168.0 (2)
  EXPECT_EQ(kw(256, 8, 7168, 256), 1);    // one load group per warp already
  // Few active experts keep the k-only rule (Mixtral T = 2: 126 vs 138 us; fi-32 T = 2: 163 vs 172).
  auto kw2 = [](int64_t experts, int64_t rows, int64_t n, int64_t k) {
    return grouped_dp_warps_per_row_block(experts, rows, (n + 31) / 32, (k + 63) / 64, 4, kSms, 3);
  };
  EXPECT_EQ(kw2(8, 4, 28672, 4096), 8);
  EXPECT_EQ(kw2(8, 4, 4096, 14336), 8);
  EXPECT_EQ(kw2(32, 16, 7168, 2048), 4);
}

// The balanced grouped dp kernel: one warp per row block and >= 3 expected row blocks per resident
// warp (132 SMs x 3 CTAs x 8 warps); the H100 MoE measurements of session 6 (fi-256's FC2, 7168 x 256).
TEST(GroupedDpSchedule, BalancedKernelOnlyWithManyRowBlocksPerWarp) {
  EXPECT_TRUE(grouped_dp_balanced(256, 16 * 8, 7168 / 32, 1, kSms, 3));   // T = 16: -7 %
  EXPECT_TRUE(grouped_dp_balanced(256, 8 * 8, 7168 / 32, 1, kSms, 3));    // T = 8: -2 %
  EXPECT_FALSE(grouped_dp_balanced(256, 4 * 8, 7168 / 32, 1, kSms, 3));   // T = 4: +2.6 % with it
  EXPECT_FALSE(grouped_dp_balanced(256, 8 * 8, 1024 / 32, 1, kSms, 3));   // Qwen3.6 FC1 T = 8: neutral
  EXPECT_FALSE(grouped_dp_balanced(256, 16 * 8, 7168 / 32, 2, kSms, 3));  // kw > 1: the dp kernel
}

// Every tactic of both tables names a kernel that is instantiated: the tables (tactics.cpp,
// grouped.cu) and the kernel lookups (sm90/decode_launch.cuh, sm90/wgmma_launch.cuh) are separate
// lists, and this is what keeps them in agreement (no GPU needed: the lookups are host code).
alignas(256) uint8_t g_fake[1 << 16];  // never dereferenced: can_implement does not touch memory

// The grouped heuristic's tactic name for E experts, T tokens routed to top_k of them (rows = T * top_k
// spread over E experts, at most T rows in one expert), on an H100-like (rich = false) or an HBM-rich device.
std::string grouped_pick(int64_t experts, int64_t tokens, int64_t top_k, int64_t n, int64_t k, bool rich) {
  GroupedGemmParams p;
  p.groups = experts;
  p.max_rows = tokens * top_k;
  p.max_group_rows = tokens;
  p.n = n;
  p.k = k;
  return std::string(grouped_gemm_tactic(grouped_gemm_default_tactic(p, rich))->name);
}

// The grouped (MoE) tile by rows per expert, from the H100 sweeps of sessions 4 and 7 (docs/PERF.md).
TEST(GroupedHeuristic, TileByRowsPerExpert) {
  auto pick_grouped = [](int64_t experts, int64_t tokens, int64_t top_k, int64_t n, int64_t k) {
    return grouped_pick(experts, tokens, top_k, n, k, false);
  };
  EXPECT_EQ(pick_grouped(256, 8, 8, 1024, 2048), "grouped_decode_dp_m8_r32_u4");  // Qwen3.6 FC1 T=8
  EXPECT_EQ(pick_grouped(256, 1024, 8, 1024, 2048), "grouped_wgmma_128x64_s6");   // 32 rows
  EXPECT_EQ(pick_grouped(256, 2048, 8, 1024, 2048), "grouped_wgmma_256x128_s4");  // 64 rows
  // 113..160 rows: the 160-token tile, which runs tiles of <= 144 tokens at wgmma N = 144 (session 36).
  EXPECT_EQ(pick_grouped(256, 4096, 8, 1024, 2048), "grouped_wgmma_128x160_s6");  // 128 rows
  EXPECT_EQ(pick_grouped(256, 4352, 8, 1024, 2048), "grouped_wgmma_128x160_s6");  // 136 rows
  EXPECT_EQ(pick_grouped(256, 3584, 8, 1024, 2048), "grouped_wgmma_256x128_s4");  // 112 rows
  EXPECT_EQ(pick_grouped(256, 4608, 8, 1024, 2048), "grouped_wgmma_128x160_s6");  // 144 rows
  EXPECT_EQ(pick_grouped(256, 5120, 8, 1024, 2048), "grouped_wgmma_128x160_s6");  // 160 rows
  EXPECT_EQ(pick_grouped(256, 5152, 8, 1024, 2048), "grouped_wgmma_256x128_s4");  // 161 rows
  EXPECT_EQ(pick_grouped(256, 4096, 8, 128, 2048), "grouped_wgmma_128x128_s4");   // < 256 weight rows
  EXPECT_EQ(pick_grouped(128, 3072, 8, 1536, 2048), "grouped_wgmma_256x128_s4");  // Qwen3-30B, 192 rows
  EXPECT_EQ(pick_grouped(128, 4096, 8, 1536, 2048), "grouped_wgmma_128x144_s6");  // Qwen3-30B, 256 rows: 2 x 144
  EXPECT_EQ(pick_grouped(8, 2048, 2, 28672, 4096), "grouped_wgmma_128x256_s4");   // Mixtral, 512 rows
  // More groups than the wgmma kernels take: dp blocks, never the stream-K tactics, whose
  // partials grow with the largest group (G = 2048, 512 rows per group).
  EXPECT_EQ(pick_grouped(2048, 131072, 8, 1024, 2048), "grouped_decode_dp_m16_r32_u2");
}

// HBM-rich devices (H200, session 20): the groups of >= 64 Mi weights (Mixtral's FC1) with 8..64
// rows in all and at most 8 per group stream-K over warps; everything else as on the H100.
TEST(GroupedHeuristic, HbmRichLargeExperts) {
  const auto pick = grouped_pick;
  for (int64_t t : {4, 8, 16, 32}) {  // Mixtral FC1
    EXPECT_EQ(pick(8, t, 2, 28672, 4096, true), "grouped_decode_m8_r32_u4") << "T = " << t;
    EXPECT_NE(pick(8, t, 2, 28672, 4096, false), "grouped_decode_m8_r32_u4") << "T = " << t;
  }
  EXPECT_EQ(pick(8, 2, 2, 28672, 4096, true), pick(8, 2, 2, 28672, 4096, false));      // 4 rows: +5 %
  EXPECT_EQ(pick(8, 64, 2, 28672, 4096, true), "grouped_wgmma_128x64_s6");              // 16 rows per group
  EXPECT_EQ(pick(8, 16, 2, 4096, 14336, true), pick(8, 16, 2, 4096, 14336, false));     // Mixtral FC2
  EXPECT_EQ(pick(256, 2, 8, 4096, 7168, true), pick(256, 2, 8, 4096, 7168, false));     // DeepSeek-V3 FC1
  EXPECT_EQ(pick(32, 8, 8, 4096, 7168, true), pick(32, 8, 8, 4096, 7168, false));       // fi-32 FC1
  EXPECT_EQ(pick(256, 8, 8, 1024, 2048, true), "grouped_decode_dp_m8_r32_u4");          // Qwen3.6 FC1
  // The one-argument form follows the device: no GPU here (and FP4KIT_HBM_RICH unset) is not rich.
  GroupedGemmParams p;
  p.groups = 8, p.max_rows = 32, p.max_group_rows = 16, p.n = 28672, p.k = 4096;
  EXPECT_EQ(grouped_gemm_default_tactic(p), grouped_gemm_default_tactic(p, device_hbm_rich()));
}

// Tuned choices (power-of-two buckets) are narrowed the same way (gemm.cpp, choose()).
TEST(GemmHeuristic, FitTokenTileNarrowsOnlyWhereATileFits) {
  auto name = [](int id) { return find_tactic(id)->name; };
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_128x256_s4"), 144)), "wgmma_w4a16_128x144_s4");
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_256x128_s4"), 100)), "wgmma_w4a16_256x112_s6");
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_256x32_s8"), 20)), "wgmma_w4a16_256x24_s8");
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_128x64_s6"), 64)), "wgmma_w4a16_128x64_s6");      // exact
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_128x64_s6"), 100)), "wgmma_w4a16_128x64_s6");     // 2 x 50
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_128x64_s6"), 96)), "wgmma_w4a16_128x48_s8");      // 2 x 48
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_128x128_s6"), 150)), "wgmma_w4a16_128x80_s6");    // 2 x 75
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_256x128_s4"), 200)), "wgmma_w4a16_256x112_s6");   // 2 x 100
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_128x32_s8"), 65)), "wgmma_w4a16_128x32_s8");      // 3 tiles
  // > 256: the model's
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_128x256_s4"), 384)), "wgmma_w4a16_128x256_s4");
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_128x128_s6"), 40)), "wgmma_w4a16_128x128_s6");    // < half
  // stream-K
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("wgmma_w4a16_128x32_s8_sk"), 20)), "wgmma_w4a16_128x32_s8_sk");
  EXPECT_EQ(name(fit_token_tile(find_tactic_id("decode_dp_m8_r32_u4"), 5)), "decode_dp_m8_r32_u4");
}

// A valid grouped problem on fake pointers (validation and dispatch only, nothing is launched).
GroupedGemmParams fake_grouped_params() {
  GroupedGemmParams g;
  g.groups = 4, g.max_rows = 16, g.max_group_rows = 8, g.n = 256, g.k = 256;
  g.a = g_fake;
  g.offsets = reinterpret_cast<const int*>(g_fake);
  g.active = reinterpret_cast<const int*>(g_fake);
  g.num_active = reinterpret_cast<const int*>(g_fake);
  g.b_prepacked = g_fake;
  g.alpha = reinterpret_cast<const float*>(g_fake);
  g.d = g_fake;
  return g;
}

TEST(TacticTables, EveryTacticIsInstantiated) {
  GemmParams p;
  p.m = 4, p.n = 256, p.k = 256;
  p.a = g_fake;
  p.b_prepacked = g_fake;
  p.b_prepacked_bytes = int64_t(prepacked_weight_bytes(p.n, p.k));
  p.alpha = reinterpret_cast<const float*>(g_fake);
  p.d = g_fake;
  for (const GemmTacticInfo& t : gemm_tactics()) {
    const Tactic* x = find_tactic(t.id);
    ASSERT_NE(x, nullptr) << t.name;
    GemmParams q = p;
    if (x->split_tail) {
      // Only where the tiles make a full wave of the grid (every SM; 132 without a GPU) and a tail of at
      // most half a wave: here 1.25 waves of one token tile, 16 chunks; not at half a wave.
      const int sms = device_info().available ? device_info().sm_count : 132;
      const int64_t grid = sms - sms % 2;
      q.m = x->block_m, q.n = x->block_n * (grid / 2), q.k = 1024;
      q.b_prepacked_bytes = int64_t(prepacked_weight_bytes(q.n, q.k));
      EXPECT_FALSE(gemm_tactic_can_implement(t.id, q).is_ok()) << t.name << " on half a wave";
      q.n = x->block_n * (grid + grid / 4);
      q.b_prepacked_bytes = int64_t(prepacked_weight_bytes(q.n, q.k));
    }
    const Status s = gemm_tactic_can_implement(t.id, q);
    EXPECT_TRUE(s.is_ok()) << t.name << ": " << s.to_string();
  }
  GroupedGemmParams g = fake_grouped_params();
  for (bool ready : {false, true}) {  // groups_ready picks other dp instantiations where they exist
    g.groups_ready = ready;
    for (int id = 0; id < grouped_gemm_tactic_count(); ++id) {
      g.tactic = id;
      const Status s = grouped_gemm_can_implement(g);
      EXPECT_TRUE(s.is_ok()) << grouped_gemm_tactic(id)->name << " ready " << ready << ": " << s.to_string();
    }
  }
}

// Gathered A rows (GroupedGemmParams::row_token, the MoE FC1 reading its tokens in place): the
// 256-row wgmma tiles only, and the source matrix's row count is required.
TEST(TacticTables, GatheredRowsOnlyOnWgmmaTactics) {
  GroupedGemmParams g = fake_grouped_params();
  g.row_token = reinterpret_cast<const int*>(g_fake);
  g.a_rows = 0;
  EXPECT_EQ(grouped_gemm_can_implement(g).code(), StatusCode::kInvalidArgument);
  g.a_rows = 3;
  for (int id = 0; id < grouped_gemm_tactic_count(); ++id) {
    g.tactic = id;
    const Status s = grouped_gemm_can_implement(g);
    if (grouped_gemm_tactic(id)->family == GroupedFamily::kWgmma && grouped_gemm_tactic(id)->block_n == 256)
      EXPECT_TRUE(s.is_ok()) << grouped_gemm_tactic(id)->name << ": " << s.to_string();
    else
      EXPECT_EQ(s.code(), StatusCode::kNotSupported) << grouped_gemm_tactic(id)->name << ": " << s.to_string();
  }
}

// Decode stream-K grid: a small layer is not spread over every resident warp (each row block's fix-up
// sums one partial per warp sharing it); large ones keep one resident wave.
TEST(DecodeStreamK, GridKeepsEachWarpRangeAtLeastMinUnits) {
  // 1024x4096, 16-row blocks: 64 row blocks x 64 chunks; 264 resident CTAs of 16 warps.
  EXPECT_EQ(decode_stream_k_ctas(64 * 64, 264, 16, 1), 256);
  EXPECT_EQ(decode_stream_k_ctas(64 * 64, 264, 16, 8), 32);   // 512 warps of 8 units
  EXPECT_EQ(decode_stream_k_ctas(64 * 64 + 1, 264, 16, 8), 33);
  EXPECT_EQ(decode_stream_k_ctas(int64_t(1) << 20, 264, 16, 8), 264);  // large: one resident wave
  EXPECT_EQ(decode_stream_k_ctas(3, 264, 16, 8), 1);
  EXPECT_EQ(decode_stream_k_ctas(0, 264, 16, 8), 1);
  EXPECT_EQ(decode_stream_k_ctas(100, 264, 0, 0), 100);  // degenerate arguments clamp to 1
  for (int64_t units : {1, 7, 64, 4096, 100000})
    for (int64_t min_units : {1, 4, 8, 16}) {
      const int64_t ctas = decode_stream_k_ctas(units, 264, 16, min_units);
      const int64_t warps = std::min(ctas * 16, units);  // as the kernel counts them
      EXPECT_GE(ctas, 1);
      EXPECT_LE(ctas, 264);
      if (ctas > 1 && ctas < 264) EXPECT_GE(units / warps, min_units - 1) << units << " " << min_units;
    }
  EXPECT_GE(decode_stream_k_min_units(), 1);
}

}  // namespace
}  // namespace fp4kit::gemm_impl
