// Grouped NVFP4 GEMM: tactic table, validation, heuristic, dispatch (gemm/grouped.h).
#include "gemm/grouped.h"

#include <algorithm>
#include <string>

#include "common/cuda_check.h"
#include "common/validate.h"
#include "fp4kit/gemm.h"
#include "gemm/families.h"
#include "gemm/prepacked_layout.h"
#include "gemm/tactics.h"  // device_hbm_rich

namespace fp4kit::gemm_impl {
namespace {

// Decode configurations must match grouped_decode_kernel_for (sm90/decode_launch.cuh), wgmma
// configurations FP4KIT_GROUPED_WGMMA_CONFIGS (sm90/wgmma_launch.cuh); the CPU test
// TacticTables.EveryTacticIsInstantiated (tests/gemm/tactic_heuristic_test.cpp) enforces it.
const GroupedTactic kTactics[] = {
    {0, GroupedFamily::kDecode, 1, 1, 4, 0, 0, 0, "grouped_decode_m8_r16_u4"},
    {1, GroupedFamily::kDecode, 1, 2, 4, 0, 0, 0, "grouped_decode_m8_r32_u4"},
    {2, GroupedFamily::kDecode, 2, 2, 2, 0, 0, 0, "grouped_decode_m16_r32_u2"},
    {3, GroupedFamily::kDecode, 4, 2, 1, 0, 0, 0, "grouped_decode_m32_r32_u1"},
    {4, GroupedFamily::kWgmma, 0, 0, 0, 128, 64, 6, "grouped_wgmma_128x64_s6"},
    {5, GroupedFamily::kWgmma, 0, 0, 0, 128, 128, 4, "grouped_wgmma_128x128_s4"},
    {6, GroupedFamily::kWgmma, 0, 0, 0, 128, 256, 4, "grouped_wgmma_128x256_s4"},
    {7, GroupedFamily::kWgmma, 0, 0, 0, 256, 128, 4, "grouped_wgmma_256x128_s4"},
    {8, GroupedFamily::kDecode, 1, 1, 4, 0, 0, 0, "grouped_decode_dp_m8_r16_u4", true},
    {9, GroupedFamily::kDecode, 1, 2, 4, 0, 0, 0, "grouped_decode_dp_m8_r32_u4", true},
    {10, GroupedFamily::kDecode, 2, 2, 2, 0, 0, 0, "grouped_decode_dp_m16_r32_u2", true},
    {11, GroupedFamily::kWgmma, 0, 0, 0, 128, 144, 6, "grouped_wgmma_128x144_s6"},
    {12, GroupedFamily::kWgmma, 0, 0, 0, 128, 160, 6, "grouped_wgmma_128x160_s6"},
    {13, GroupedFamily::kDecode, 1, 1, 4, 0, 0, 0, "grouped_decode_dpr_m8_r16_u4", true, true},
    {14, GroupedFamily::kDecode, 1, 2, 4, 0, 0, 0, "grouped_decode_dpr_m8_r32_u4", true, true},
};
constexpr int kTacticCount = int(sizeof(kTactics) / sizeof(kTactics[0]));

Status validate(const GroupedGemmParams& p, const char* fn) {
  const int64_t lda = p.lda ? p.lda : p.k;
  const int64_t ldd = p.ldd ? p.ldd : p.n;
  detail::ArgCheck check(fn);
  check.positive(p.groups, "groups")
      .require(p.max_rows >= 0, StatusCode::kInvalidArgument, "max_rows must be >= 0")
      .require(p.max_group_rows >= 0, StatusCode::kInvalidArgument, "max_group_rows must be >= 0")
      .positive(p.n, "n")
      .positive(p.k, "k")
      .require(p.max_rows < (int64_t(1) << 31) && p.n < (int64_t(1) << 31) && p.k < (int64_t(1) << 31) &&
                   p.groups < (int64_t(1) << 31),
               StatusCode::kInvalidArgument, "groups, max_rows, n and k must each be < 2^31")
      .multiple_of(p.k, 16, "k", "NVFP4 block size")
      .dtype_in(p.a_dtype, {DType::kBF16, DType::kFP16}, "a")
      .not_null(p.a, "a")
      .not_null(p.offsets, "offsets")
      .not_null(p.active, "active")
      .not_null(p.num_active, "num_active")
      .not_null(p.b_prepacked, "b_prepacked")
      .not_null(p.alpha, "alpha")
      .not_null(p.d, "d")
      .at_least(lda, p.k, "lda", "k")
      .at_least(ldd, p.n, "ldd", "n")
      .multiple_of(lda, 8, "lda", "rows of A must stay 16-byte aligned")
      .aligned(p.a, 16, "a")
      .aligned(p.b_prepacked, 16, "b_prepacked")
      .size_fits(p.row_token ? p.a_rows : p.max_rows, lda, 2, "A")
      .size_fits(p.max_rows, ldd, 2, "D")
      .size_fits(p.groups, prepacked_weight_bytes(p.n, p.k), 1, "B");
  if (p.row_token != nullptr)
    check.require(p.a_rows > 0 && p.a_rows < (int64_t(1) << 31), StatusCode::kInvalidArgument,
                  "a_rows (rows of the gathered A) must be in [1, 2^31) with row_token");
  if (p.tactic >= kTacticCount || p.tactic < -1)
    check.require(false, StatusCode::kInvalidArgument, "unknown grouped tactic " + std::to_string(p.tactic));
  return check.status();
}

const GroupedTactic& choose(const GroupedGemmParams& p) {
  if (p.tactic >= 0 && p.tactic < kTacticCount) return kTactics[p.tactic];
  return kTactics[grouped_gemm_default_tactic(p)];
}

Status tactic_can_implement(const GroupedTactic& t, const GroupedGemmParams& p) {
  if (p.row_token != nullptr && t.family != GroupedFamily::kWgmma)
    return Status(StatusCode::kNotSupported,
                  std::string("grouped tactic ") + t.name + ": gathered A rows (row_token) need a wgmma tactic");
  return t.family == GroupedFamily::kDecode ? grouped_decode_can_implement(t, p) : grouped_wgmma_can_implement(t, p);
}

}  // namespace

int grouped_gemm_tactic_count() { return kTacticCount; }

const GroupedTactic* grouped_gemm_tactic(int id) { return id >= 0 && id < kTacticCount ? &kTactics[id] : nullptr; }

// Rows per active group decide the family, as M does for the dense GEMM: up to 16 rows the
// decode kernels stream each group's weights once per 8..32-row token tile; beyond that the wgmma
// tiles reuse the weights across up to 256 rows. (Measured choices: docs/MOE.md.)
int grouped_gemm_default_tactic(const GroupedGemmParams& p) { return grouped_gemm_default_tactic(p, device_hbm_rich()); }

int grouped_gemm_default_tactic(const GroupedGemmParams& p, bool rich) {
  const int64_t mean_rows = grouped_mean_rows(p);
  const int64_t max_rows = std::max<int64_t>(1, std::min(p.max_group_rows > 0 ? p.max_group_rows : p.max_rows, p.max_rows));
  if (mean_rows <= 16 && max_rows <= 64) {
    // The token tile follows the typical group, not the largest: a group with more rows than the
    // tile is covered by more token tiles (gridDim.y), whose warps skip the smaller groups.
    // Decomposition, from A/B runs on H100 (MoE graph replay): small experts (Qwen3.6: 1024x2048,
    // 2048x512) are fastest with data-parallel row blocks (session 2, T=1: 23 us vs 43 us
    // stream-K). Large experts (DeepSeek-V3, fi-32, Mixtral: >= 15M weights each) took stream-K
    // over warps in session 2; since the grouped dp kernel runs 3 CTAs/SM (session 4) the 32-row dp
    // blocks win there too, at T = 2..16 up to 22 % (fi-32 T=4 315 -> 245 us, DeepSeek-V3 T=16
    // 1159 -> 1089, Mixtral T=8 330 -> 299; docs/PERF.md).
    const bool big = p.n * p.k >= (int64_t(8) << 20);
    const bool few = p.max_rows <= 8;
    // Long K (FC1 of the H >= 4096 presets): rolling load groups (GroupedTactic::roll; 2 CTAs/SM),
    // unless the group list is ready early (the plain kernel then requests its first weights before
    // the PDL wait). H100 session 15, pipeline path, FC1 forced 14 vs 9, graph us: fi-256 T = 4 / 8
    // / 16 57.1 -> 54.8 / 87.6 -> 82.2 / 148.7 -> 137.6, fi-32 T = 4..16 -1..-4 % (T = 2 +3.5 %);
    // at K = 2048 (Qwen) it gained at T = 8, 16 and lost at T = 2 (+1..+10 %): plain there; with
    // 4 rows per group (Mixtral T = 16) +1.7 %: only up to 3. Auto path (run 203): fi-256 T = 4
    // 57.2 -> 55.1 (W4A4 55.5 -> 53.3), Mixtral T = 2..8 -1.5..-2.4 %, DeepSeek-V3 pipeline -2..-6.5 %.
    const bool roll = p.k >= 4096 && !p.groups_ready && mean_rows <= 3;
    // HBM-rich devices (H200): groups of >= 64 Mi weights (Mixtral's FC1, 28672 x 4096) with at least
    // 8 rows in all take stream-K over warps (one persistent wave of equal warp ranges) instead of the
    // dp blocks (thousands of short CTAs). Session 20 runs 7-8 (H200, pipeline path, FC1 forced, graph
    // us): Mixtral T = 4 / 8 / 16 / 32 -5.6 / -6.0 / -11.6 / -2.9 % (T = 16 268.8 -> 237.7); not at
    // 4 rows (T = 2: +5.1 %), nor for the 29 Mi-weight FC1 of DeepSeek-V3 / fi-32 (-8..+19 % by T).
    if (mean_rows <= 8) {
      if (rich && p.max_rows >= 8 && p.n * p.k >= (int64_t(1) << 26)) return 1;
      return !big && few ? 8 : roll ? 14 : 9;  // dp, 16- or 32-row blocks
    }
    // 9..16 rows (few large experts: Mixtral, fi-32 at T = 48 / 64; session 4): dp with 16-token
    // tiles at 12 rows per expert (Mixtral 546 -> 488 us, fi-32 997 -> 508 against stream-K id 2),
    // the wgmma 128x64 tile at 16 (Mixtral 1076 -> 539, fi-32 1093 -> 566); stream-K was slowest.
    if (mean_rows <= 12 || p.groups > 1024) return 10;
    return 4;
  }
  // The wgmma kernels keep per-group tile counts in shared memory (sm90::kWgMaxGroups = 1024). Past
  // that, dp blocks with 16-token tiles: the stream-K tactics' partials grow with the largest group's
  // token tiles times the resident warps (tens of GB at a few thousand rows per group; review of
  // session 28). Not measured: no preset has more than 1024 local experts.
  if (p.groups > 1024) return 10;
  if (mean_rows <= 32) return 4;
  // 113..136 rows (MoE T=4096 with E=256: ~128 +- 11 rows per expert): a 144-token tile, one tile
  // per expert where 128-token tiles need 1.5 (H100 session 7, eager us, both GEMMs on the tile, 7 ->
  // 11: DeepSeek-V3 7013 -> 6344, Qwen3.6 688 -> 653, fi-256 1407 -> 1392; at 96 and 256 rows per
  // expert 256x128 stays faster: Qwen3.6 T=3072 505 vs 580, Qwen3-30B T=4096 820 vs 831).
  // Session 8 (the 144-token tile now keeps two wgmma batches in flight): also at 241..272 rows, two
  // 144-token tiles (288) where 256 +- 16 rows leave half the experts a third 128-token tile (ncu,
  // FC1 + FC2, Qwen3-30B T=4096, two runs: 7 -> 11 716 -> 700 and 717 -> 703 us); at 160..224 rows
  // 256x128 stays well ahead (Qwen3-30B T=3072 581 vs 699, Qwen3.6 T=6144 804 vs 959).
  // Session 36: at 113..160 rows the 160-token tile instead, whose tiles of at most 144 valid tokens
  // run at wgmma N = 144 (sm90 wgmma_gemm_kernel, kFit): one tile per expert at the 144-token tile's
  // tensor work, no second tile for the experts past 144 rows. H100 run 3, eager us, medians of 4,
  // 11 -> 12 for both GEMMs (W4A16 / W4A4): T = 4096 (128 rows) DeepSeek-V3 -0.4 / -0.5 %, fi-256
  // -1.7 / -1.5 %, Qwen3.6 -2.3 / -1.6 %; T = 4352 (136 rows) -9.9 / -8.9 %, -7.0 / -7.1 %, -9.5 / -10.0 %
  // (the 160-token tile without the fit: +1.7 / +4.0 % at DeepSeek-V3 T = 4096). Run 5, one binary, 12
  // against 11 / the rule's tile before: 128 rows DeepSeek-V3 -0.2 / -1.4 %, fi-256 -1.4 / -2.1 %, Qwen3.6
  // -2.6 / -2.4 %; 144 rows (T = 4608; 256x128 before) -24 / -23 %, -24 / -22 %, -19 / -20 %; at 112 rows
  // 256x128 stays (12: +3.6..+14.9 % against it). Run 6, 12 against 256x128: 152 rows -15..-19 %, 160
  // rows -3.7..-9.7 %, 168 rows DeepSeek-V3 +13 / +12 % (fi-256 -2.5 / -0.8 %, Qwen3.6 +3.6 / +2.9 %), 176 rows
  // +5..+17 %.
  if (p.n >= 256 && mean_rows > 112 && mean_rows <= 160) return 12;
  if (p.n >= 256 && mean_rows > 240 && mean_rows <= 272) return 11;
  // Other 33..256 rows per group: 256 weight rows x 128 tokens (H100, session 4, MoE T=4096 = 128
  // rows per expert, FC1 x FC2 tactic sweep: DeepSeek-V3 9832 -> 8476 us, Qwen3.6-35B-A3B 944 -> 874,
  // Qwen3-30B-A3B 1102 -> 1016 against 128x128; session 7 after the vector epilogue, eager us with
  // both GEMMs on one tile: 64 rows (T=2048, E=256) Qwen3.6 556 -> 467 and fi-256 1092 -> 916
  // against 128x64; docs/PERF.md); 128x128 when the groups have fewer than 256 weight rows.
  if (mean_rows <= 256) return p.n >= 256 ? 7 : 5;
  // Above 256 rows 128x256: 256x128 won 2-4 % at 512 rows on the small-expert presets but lost
  // 8-10 % on Mixtral and fi-32 (T=2048, 512 rows per expert).
  return 6;
}

Status grouped_gemm_can_implement(const GroupedGemmParams& p) {
  FP4KIT_RETURN_IF_ERROR(validate(p, "grouped_gemm"));
  return tactic_can_implement(choose(p), p);
}

size_t grouped_gemm_workspace_bytes(const GroupedGemmParams& p) {
  if (p.groups <= 0 || p.max_rows <= 0 || p.n <= 0 || p.k <= 0) return 0;
  const GroupedTactic& t = choose(p);
  return t.family == GroupedFamily::kDecode ? grouped_decode_workspace_bytes(t, p) : 0;
}

Status grouped_gemm(const GroupedGemmParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  FP4KIT_RETURN_IF_ERROR(validate(p, "grouped_gemm"));
  if (p.max_rows == 0) return Status::ok();
  const GroupedTactic& t = choose(p);
  FP4KIT_RETURN_IF_ERROR(tactic_can_implement(t, p));
  const size_t need = grouped_gemm_workspace_bytes(p);
  if (need > 0) {
    FP4KIT_RETURN_IF_ERROR(detail::ArgCheck("grouped_gemm")
                               .not_null(workspace, "workspace")
                               .workspace(workspace_bytes, size_t(need))
                               .aligned(workspace, 16, "workspace")
                               .status());
  }
  FP4KIT_RETURN_IF_ERROR(detail::require_device("grouped_gemm"));
  if (t.family == GroupedFamily::kDecode) return grouped_decode_launch(t, p, workspace, stream);
  return grouped_wgmma_launch(t, p, stream);
}

}  // namespace fp4kit::gemm_impl
