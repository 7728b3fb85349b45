// The dense GEMM heuristic and the wgmma split-K rule (CPU only: pure functions of the shape and
// the SM count; the H100 measurements behind them are in docs/PERF.md, session 3).
#include <gtest/gtest.h>

#include <string>

#include "fp4kit/gemm.h"
#include "gemm/grouped.h"
#include "gemm/tactics.h"

namespace fp4kit::gemm_impl {
namespace {

constexpr int kSms = 132;

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

TEST(GemmHeuristic, FamilyAndTileByTokenCount) {
  // M <= 8: data-parallel decode; 32-row blocks while their CTAs cover the SMs.
  EXPECT_EQ(pick(1, 8192, 28672), "decode_dp_m8_r32_u4");
  EXPECT_EQ(pick(1, 6144, 4096), "decode_dp_m8_r32_u4");
  EXPECT_EQ(pick(4, 14336, 4096), "decode_dp_m8_r32_u4");
  EXPECT_EQ(pick(1, 4096, 4096), "decode_dp_m8_r16_u4");
  EXPECT_EQ(pick(1, 4096, 14336), "decode_dp_m8_r16_u4");
  EXPECT_EQ(pick(5, 4096, 14336), "decode_dp_m8_r16_u4");
  EXPECT_EQ(pick(8, 8192, 8192), "decode_dp_m8_r32_u4");
  // ... except very wide layers with short K (> 4 dp CTAs per SM of two load groups per warp).
  EXPECT_EQ(pick(1, 28672, 4096), "wgmma_w4a16_256x16_s8");
  EXPECT_EQ(pick(8, 28672, 4096), "wgmma_w4a16_256x16_s8");
  EXPECT_EQ(pick(1, 28672, 28672), "decode_dp_m8_r32_u4");
  // 9..32: small token tiles; 256 rows when the K ranges stay long ...
  EXPECT_EQ(pick(16, 8192, 28672), "wgmma_w4a16_256x16_s8");
  EXPECT_EQ(pick(16, 4096, 14336), "wgmma_w4a16_128x16_s8");
  EXPECT_EQ(pick(12, 28672, 4096), "wgmma_w4a16_256x16_s8");
  // ... except 9..16 tokens with K and N <= 8192: the dp decode family's 16-token tile.
  // (one 16-token tile when its CTAs cover the SMs, else two 8-token tiles).
  EXPECT_EQ(pick(12, 8192, 8192), "decode_dp_m16_r32_u2");
  EXPECT_EQ(pick(16, 6144, 4096), "decode_dp_m16_r32_u2");
  EXPECT_EQ(pick(16, 4096, 4096), "decode_dp_m8_r32_u4");
  EXPECT_EQ(pick(32, 28672, 4096), "wgmma_w4a16_256x32_s8");
  EXPECT_EQ(pick(17, 4096, 4096), "wgmma_w4a16_128x32_s8");
  // 33..64: 128x64 unless its split K ranges get short.
  EXPECT_EQ(pick(64, 8192, 28672), "wgmma_w4a16_128x64_s6");
  EXPECT_EQ(pick(64, 4096, 4096), "wgmma_w4a16_128x32_s8");
  // 65..128: 128x128 with split-K on long K, else the full-wave model.
  EXPECT_EQ(pick(128, 8192, 28672), "wgmma_w4a16_128x128_s4");
  EXPECT_EQ(pick(128, 28672, 4096), "wgmma_w4a16_256x128_s4");
  // Large M: full-wave tiles, no small ones.
  const std::string big = pick(4096, 8192, 8192);
  EXPECT_EQ(big.rfind("wgmma_", 0), 0u) << big;
  EXPECT_EQ(big.find("x16_"), std::string::npos) << big;
  EXPECT_EQ(big.find("x32_"), std::string::npos) << big;
}

// Every tactic of both tables names a kernel that is instantiated: the tables (tactics.cpp,
// grouped.cu) and the kernel lookups (sm90/decode_launch.cuh, sm90/wgmma_launch.cuh) are separate
// lists, and this is what keeps them in agreement (no GPU needed: the lookups are host code).
alignas(256) uint8_t g_fake[1 << 16];  // never dereferenced: can_implement does not touch memory

TEST(TacticTables, EveryTacticIsInstantiated) {
  GemmParams p;
  p.m = 4, p.n = 256, p.k = 256;
  p.a = g_fake;
  p.b_prepacked = g_fake;
  p.b_prepacked_bytes = int64_t(prepacked_weight_bytes(p.n, p.k));
  p.alpha = reinterpret_cast<const float*>(g_fake);
  p.d = g_fake;
  for (const GemmTacticInfo& t : gemm_tactics()) {
    const Status s = gemm_tactic_can_implement(t.id, p);
    EXPECT_TRUE(s.is_ok()) << t.name << ": " << s.to_string();
  }
  GroupedGemmParams g;
  g.groups = 4, g.max_rows = 16, g.max_group_rows = 8, g.n = 256, g.k = 256;
  g.a = g_fake;
  g.offsets = reinterpret_cast<const int*>(g_fake);
  g.active = reinterpret_cast<const int*>(g_fake);
  g.num_active = reinterpret_cast<const int*>(g_fake);
  g.b_prepacked = g_fake;
  g.alpha = reinterpret_cast<const float*>(g_fake);
  g.d = g_fake;
  for (int id = 0; id < grouped_gemm_tactic_count(); ++id) {
    g.tactic = id;
    const Status s = grouped_gemm_can_implement(g);
    EXPECT_TRUE(s.is_ok()) << grouped_gemm_tactic(id)->name << ": " << s.to_string();
  }
}

}  // namespace
}  // namespace fp4kit::gemm_impl
