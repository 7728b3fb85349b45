#include "gemm/tactics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "fp4kit/device.h"

namespace fp4kit::gemm_impl {

const std::vector<Tactic>& tactic_table() {
  static const std::vector<Tactic> table = [] {
    std::vector<Tactic> t;
    struct DecodeConfig { int nt, rows, unroll; };
    struct WgmmaConfig { int block_n, block_m, stages; };
    auto add_decode = [&t](std::initializer_list<DecodeConfig> configs, bool dp, bool frag_a = false,
                           bool roll = false) {
      for (const DecodeConfig& c : configs) {
        Tactic x;
        x.id = int(t.size());
        x.family = Family::kDecode;
        x.nt = c.nt;
        x.rows = c.rows;
        x.unroll = c.unroll;
        x.dp = dp;
        x.frag_a = frag_a;
        x.roll = roll;
        x.name = std::string(frag_a ? "decode_dpf" : dp ? "decode_dp" : "decode") + (roll ? "r_m" : "_m") +
                 std::to_string(x.nt * 8) + "_r" +
                 std::to_string(16 * x.rows) + "_u" + std::to_string(x.unroll);
        t.push_back(x);
      }
    };
    auto add_wgmma = [&t](std::initializer_list<WgmmaConfig> configs, bool stream_k = false,
                          bool split_tail = false, int step_chunks = 1) {
      for (const WgmmaConfig& c : configs) {
        Tactic x;
        x.id = int(t.size());
        x.family = Family::kWgmma;
        x.block_n = c.block_n;
        x.block_m = c.block_m;
        x.stages = c.stages;
        x.stream_k = stream_k;
        x.split_tail = split_tail;
        x.step_chunks = step_chunks;
        x.name = "wgmma_w4a16_" + std::to_string(x.block_n) + "x" + std::to_string(x.block_m) + "_s" +
                 std::to_string(x.stages) + (stream_k ? "_sk" : split_tail ? "_st" : "") +
                 (step_chunks == 2 ? "_k128" : "");
        t.push_back(x);
      }
    };
    // Ids are positions in this list and are only ever appended to (tuned caches name them).
    // Decode family, stream-K over warps: every instantiated (nt, rows, unroll) of decode_launch.cuh.
    add_decode({{1, 1, 4}, {1, 2, 4}, {1, 4, 2}, {2, 2, 2}, {2, 4, 2}, {4, 2, 1}, {4, 4, 1}}, false);
    // Large-M (wgmma) family: block_n weight rows x block_m tokens, `stages` pipeline stages
    // (FP4KIT_WGMMA_CONFIGS in sm90/wgmma_launch.cuh).
    add_wgmma({{128, 64, 6}, {128, 128, 4}, {128, 128, 6}, {128, 256, 4}, {256, 128, 4}, {256, 128, 6}});
    // Data-parallel decode variants (decode_dp_kernel).
    add_decode({{1, 1, 4}, {1, 2, 4}, {2, 2, 2}}, true);
    // Small token tiles of the wgmma family (wgmma N = 16, 32; split-K when the tiles do not fill
    // the SMs).
    add_wgmma({{128, 16, 8}, {128, 32, 8}, {256, 16, 8}, {256, 32, 8}});
    // dp decode with A arranged in B-fragment order first (16 and 32 tokens per pass: the row-major
    // B-fragment gathers of 16-token tiles saturate L1).
    add_decode({{2, 1, 4}, {2, 2, 2}, {4, 1, 4}, {4, 2, 2}}, true, true);
    // The wgmma tiles with stream-K (same kernels; every SM streams the same number of k chunks).
    add_wgmma({{128, 32, 8}, {256, 32, 8}, {128, 64, 6}, {128, 128, 4}, {256, 128, 4}, {128, 256, 4}}, true);
    // 8-token dp tiles on A in fragment order.
    add_decode({{1, 1, 4}, {1, 2, 4}}, true, true);
    // 16-token dp tiles with twice the weight bytes in flight per warp (2 CTAs/SM).
    add_decode({{2, 1, 8}, {2, 2, 4}}, true, true);
    // 256 weight rows x 64 tokens: half the activation bytes per weight byte of 128x64 (the
    // activation tiles are re-read from L2 by every CTA of a token tile).
    add_wgmma({{256, 64, 8}});
    // Token tiles of 48 and 96 (session 13): a tile's tensor-core time adds to its decode time
    // (docs/GEMM.md "Decode and wgmma do not overlap"), so M = 33..48 / 65..96 should not pay for
    // 64 / 128 tokens.
    add_wgmma({{128, 48, 8}, {256, 48, 8}, {128, 96, 6}, {256, 96, 6}});
    add_wgmma({{128, 24, 8}, {256, 24, 8}, {128, 80, 6}, {256, 80, 6}, {128, 112, 6}, {256, 112, 6}});
    add_wgmma({{128, 144, 4}, {128, 160, 4}, {128, 192, 4}, {128, 224, 4}});
    // Rolling load groups (session 15): the dp tiles of up to 16 tokens, row-major A (dpr) and A in
    // fragment order (dpfr).
    add_decode({{1, 1, 4}, {1, 2, 4}}, true, false, true);
    add_decode({{1, 1, 4}, {1, 2, 4}, {2, 1, 4}, {2, 2, 4}}, true, true, true);
    // Split tail (session 40): full waves of whole tiles, then the last wave's tiles as two K halves
    // in 2-CTA clusters (wgmma_split_tail_dp_tiles). The tiles whose FP32 accumulators fit in their
    // pipeline stages (WgCfg::kClusterReduce; 256x128 s4 does not) among those the full-wave model
    // weighs above 256 tokens, and 128x128 s6 / 256x128 s6.
    add_wgmma({{128, 256, 4}, {128, 224, 4}, {128, 192, 4}, {128, 160, 4}, {128, 144, 4}, {128, 128, 4},
               {128, 128, 6}, {256, 128, 6}, {128, 64, 6}},
              false, true);
    // 24-token tiles on A in fragment order, rolling (session 41): one pass for 17..24 tokens, where
    // the wgmma 24-token tiles' decode and tensor work serialize (docs/GEMM.md "Decode and wgmma do not
    // overlap").
    add_decode({{3, 1, 4}}, true, true, true);
    // The 32-row 24-token tile (session 42), 2-chunk groups (4-chunk ones spill): two CTAs per SM only
    // because its reduction's partials go into the warps' idle rings (decode_dp_kernel kPartialInRing).
    add_decode({{3, 2, 2}}, true, true, true);
    // Two stages (128 K) per consumer step (session 43): the small token tiles' per-step costs
    // (barrier waits, wgmma fence / commit / wait, releases) halved per K, the two decodes interleaved.
    // The consumer holds up to four stages, so rings of 8 (short K ranges) and 12 (wgmma_pair_step_tactic).
    add_wgmma({{128, 24, 8}, {128, 32, 8}, {128, 48, 8}, {128, 64, 8}}, false, false, 2);
    add_wgmma({{128, 24, 12}, {128, 32, 12}, {128, 48, 12}, {128, 64, 12}}, false, false, 2);
    return t;
  }();
  return table;
}

const Tactic* find_tactic(int id) {
  const auto& t = tactic_table();
  return (id >= 0 && id < int(t.size())) ? &t[id] : nullptr;
}

static int decode_id(int nt, int rows, int u) {
  for (const Tactic& t : tactic_table())
    if (t.family == Family::kDecode && !t.dp && t.nt == nt && t.rows == rows && t.unroll == u) return t.id;
  return 0;
}

// The data-parallel / split-K wgmma tactic of a tile with `step_chunks` stages per consumer step, or its
// split-tail variant; -1 if none.
static int wgmma_id(int block_n, int block_m, int stages, bool split_tail = false, int step_chunks = 1) {
  for (const Tactic& t : tactic_table())
    if (t.family == Family::kWgmma && !t.stream_k && t.split_tail == split_tail && t.step_chunks == step_chunks &&
        t.block_n == block_n && t.block_m == block_m && t.stages == stages)
      return t.id;
  return -1;
}

// Large-M tile choice: the fewest waves of padded tile area, weighted by each tile's measured
// full-wave efficiency (smaller tiles reload more operand bytes and decode more per FLOP).
struct WaveCand {
  int bn, bm, stages;
  double eff;
};
// Relative throughput of full waves measured on H100 (m=4096 n=8192 k=8192: 862, 728, 626 and
// 398 TFLOPS for 128x256, 256x128, 128x128 and 128x64).
constexpr WaveCand kWaveCands[] = {{128, 256, 4, 1.0}, {256, 128, 4, 0.85}, {128, 128, 4, 0.73}, {128, 64, 6, 0.47}};
// Above 256 tokens (session 13) the 144..224-token tiles join, and the cost counts the split-K that
// the dense launch applies when the tiles do not fill the SMs (wgmma_k_splits): waves of (tile,
// split) units x K chunks per unit x tile area / efficiency. Efficiencies relative to 128x256 from
// 8192x28672, 8192x8192 and 28672x4096 at M = 4096 (H100, run 181): 224 0.96, 192 0.96, 160 0.90, 144
// 0.84. This model picked the measured-fastest of ten tactics at every M = 320, 384, 448, 640, 768,
// 1280, 4096 on those shapes and 4096x14336 (e.g. 8192x28672 M = 640: 128x160 390 us vs 578 for
// 128x256; 4096x14336 M = 320: 128x160 67 vs 108 for the split-blind model's 128x128 s4).
constexpr WaveCand kWideWaveCands[] = {{128, 256, 4, 1.0},  {256, 128, 4, 0.85}, {128, 128, 4, 0.73},
                                       {128, 64, 6, 0.47},  {128, 224, 4, 0.96}, {128, 192, 4, 0.96},
                                       {128, 160, 4, 0.90}, {128, 144, 4, 0.84}};

// A split tail's cost in full waves (its tiles' halves run side by side, then the cluster reduction).
constexpr double kSplitTailWave = 0.7;

template <size_t N>
static int wave_model_tactic(const GemmParams& p, int sm_count, const WaveCand (&cands)[N], bool count_splits) {
  const int sms = sm_count > 0 ? sm_count : 132;
  const int64_t k_chunks = (p.k + 63) / 64;
  double best = 0;
  int best_id = -1;
  for (const WaveCand& c : cands) {
    const int id = wgmma_id(c.bn, c.bm, c.stages);
    if (id < 0) continue;
    const int64_t tiles = ((p.n + c.bn - 1) / c.bn) * ((p.m + c.bm - 1) / c.bm);
    const int64_t ks = count_splits ? wgmma_k_splits(tiles, k_chunks, sms) : 1;
    const int64_t waves = (tiles * ks + sms - 1) / sms;
    const double unit_chunks = count_splits ? double((k_chunks + ks - 1) / ks) : 1.0;
    const double cost = double(waves) * unit_chunks * c.bn * c.bm / c.eff;
    if (best_id < 0 || cost < best) {
      best = cost;
      best_id = id;
    }
    // The same tile with its last, at most half-full wave split in two K halves (session 40): that wave
    // costs kSplitTailWave of a full one instead of a whole one.
    const int st_id =
        count_splits && wgmma_split_tail_rule().get() != 0 ? wgmma_id(c.bn, c.bm, c.stages, true) : -1;
    const int64_t grid = sms - sms % 2;  // as the launch (wgmma_host.cu wgmma_split)
    const int64_t dp_tiles = st_id < 0 ? -1 : wgmma_split_tail_dp_tiles(tiles, k_chunks, grid);
    if (dp_tiles > 0) {
      const double st_cost = (double(dp_tiles / grid) + kSplitTailWave) * k_chunks * c.bn * c.bm / c.eff;
      if (st_cost < best) {
        best = st_cost;
        best_id = st_id;
      }
    }
  }
  return best_id;
}

static int decode_dp_id(int nt, int rows, int u, bool roll = false) {
  for (const Tactic& t : tactic_table())
    if (t.family == Family::kDecode && t.dp && !t.frag_a && t.roll == roll && t.nt == nt && t.rows == rows &&
        t.unroll == u)
      return t.id;
  return -1;
}

static int decode_dpf_id(int nt, int rows, int u, bool roll = false) {
  for (const Tactic& t : tactic_table())
    if (t.family == Family::kDecode && t.frag_a && t.roll == roll && t.nt == nt && t.rows == rows && t.unroll == u)
      return t.id;
  return -1;
}

int64_t dp_warps_per_row_block(int64_t k_chunks) {
  int64_t kw = 8;
  while (kw > 1 && k_chunks < kw * 8) kw /= 2;
  return kw;
}

int decode_l2_prefetch_chunks(const Tactic& t, DType a_dtype, bool enable_pdl) {
  if (t.family != Family::kDecode || !t.dp) return 0;
  if (t.frag_a) return t.nt == 1 ? 8 : 0;
  return a_dtype == DType::kE2M1x2 && enable_pdl ? 8 : 0;
}

int64_t dense_dp_warps_per_row_block(int64_t row_blocks, int64_t k_chunks, int sms) {
  int64_t kw = dp_warps_per_row_block(k_chunks);
  const int64_t min_ctas = 3 * int64_t(sms > 0 ? sms : 132) / 2;
  while (kw > 1 && row_blocks * (kw / 2) / 8 >= min_ctas) kw /= 2;
  return kw;
}

bool decode_roll(int nt, int rows, int64_t chunks_per_warp) {
  if (nt == 1) return rows == 1 ? chunks_per_warp <= 32 : chunks_per_warp >= 16 && chunks_per_warp <= 32;
  return rows == 1 ? chunks_per_warp <= 16 : chunks_per_warp >= 16 && chunks_per_warp <= 32;
}

bool hbm_rich(double dram_peak_gbps, int sm_count) {
  return sm_count > 0 && dram_peak_gbps / sm_count >= kHbmRichGbpsPerSm;
}

int env_digit(const char* name, const char* allowed) {
  const char* e = std::getenv(name);
  return e != nullptr && e[0] != 0 && e[1] == 0 && std::strchr(allowed, e[0]) != nullptr ? e[0] - '0' : -1;
}

bool device_hbm_rich() {
  static const int forced = env_digit("FP4KIT_HBM_RICH", "01");
  if (forced >= 0) return forced == 1;
  const DeviceInfo& d = device_info();  // the current device's
  return d.available && hbm_rich(d.dram_peak_gbps, d.sm_count);
}

bool w4a4_ring_enabled(bool rich) {
  static const int forced = env_digit("FP4KIT_W4A4_RING", "01");
  return forced >= 0 ? forced == 1 : !rich;
}

int64_t decode_stream_k_ctas(int64_t units, int64_t resident, int warps_per_cta, int64_t min_units) {
  const int64_t per_cta = int64_t(std::max(1, warps_per_cta)) * std::max<int64_t>(1, min_units);
  return std::max<int64_t>(1, std::min(resident, (units + per_cta - 1) / per_cta));
}

int64_t decode_stream_k_min_units() {
  static const int64_t v = [] {
    const char* e = std::getenv("FP4KIT_DECODE_SK_MIN_UNITS");
    if (e == nullptr || *e == 0) return kDecodeStreamKMinUnits;
    char* end = nullptr;
    const long x = std::strtol(e, &end, 10);
    return *end == 0 && x >= 1 && x <= 256 ? int64_t(x) : kDecodeStreamKMinUnits;
  }();
  return v;
}

int decode_dp_heuristic(int64_t m, int64_t rows, int64_t k, int sm_count, bool w4a4, bool rich, bool bf16_out) {
  // H100, W4A16, M = 1..16 over the bench shapes (docs/PERF.md, session 2): one CTA per 16- or
  // 32-row block, K split over its 8 warps, beats stream-K over warps everywhere there are enough
  // CTAs (8192x8192 M=1: 20.7 vs 29.0 us; 4096x4096: 9.3 vs 18.9 us); 32-row blocks from 5 tokens
  // on (8-token tiles with two row tiles share their activation loads).
  const int64_t slots = 2 * int64_t(sm_count > 0 ? sm_count : 132);
  const int64_t k_chunks = (k + 63) / 64;
  // Row blocks and warps per row block of the 16- and 32-row tiles, as decode_host.cu launches them.
  // The rules below that ask for 8 warps per row block were fitted when only there W4A16's
  // fragment-order tiles read A through the warps' rings instead of behind the arrangement kernel
  // (decode_host.cu ring_a; since session 26 also with 4 warps, and with 2 on the 32-row tiles, which
  // made gate_up's 8- and 16-token tiles 1-3.5 % faster without changing its tiles).
  const int64_t rb16 = (rows + 15) / 16, rb32 = (rows + 31) / 32;
  const int64_t kw16 = dense_dp_warps_per_row_block(rb16, k_chunks, int(slots / 2));
  // Layers of N·K <= 16 Mi ("small"): the line several token ranges' rules draw (sessions 6, 42, 47, 49).
  const bool small_layer = rows * k <= (int64_t(16) << 20);
  const int64_t kw32 = dense_dp_warps_per_row_block(rb32, k_chunks, int(slots / 2));
  auto chunks_per_warp = [&](int64_t block_rows) { return k_chunks / (block_rows == 16 ? kw16 : kw32); };
  // The 16-row tile's CTAs fit one wave (2 per SM) and each warp streams at most `max_chunks`: then
  // its rolling variant beats the 32-row tiles at up to 8 tokens (session 15, below).
  auto rolling_r16_fits = [&](int64_t max_chunks) {
    return (rb16 * kw16 + 7) / 8 <= slots && k_chunks / kw16 <= max_chunks;
  };
  // 17..32 tokens: two passes of the 16-token tile, only on small layers (N·K <= 16 Mi), where the
  // wgmma 32-token tiles' fixed costs dominate (session 6, M = 24 / 32: 4096x4096 11.0 / 11.2 us vs
  // 13.9 / 14.0 for wgmma 128x32; 4096x14336 25.0 vs 24.4 and the larger layers lose). Since split-K
  // reduces inside clusters (session 12, graph us, M = 24 / 32): 6144x4096 18.0 / 18.1 for two dp
  // passes vs 12.9 / 12.9 for 128x32, 4096x4096 10.7 / 10.9 vs 13.1 / 13.1.
  // 17..24 tokens: one pass of the rolling 24-token 16-row tile where its CTAs (8 warps per row block:
  // A through the warps' rings in W4A16, arranged in W4A4) fill 90..100 % of one wave of 2 per SM
  // (measured at 256 CTAs, 97 %; narrower layers keep their rules, unmeasured with it). H100 session 41
  // run 1 (forced vs auto, graph us with PDL, two alternated repetitions, W4A16 / W4A4): down M = 17 /
  // 20 / 24 21.67 / 21.70 / 21.79 -> 18.06 / 18.16 / 18.59 for the wgmma 128x24 tile (W4A4 24.4 ->
  // 20.3), o 8.45 -> 8.04..8.09 for two passes of the 16-token tile (W4A4 10.0 -> 9.3..9.4). It lost
  // where its CTAs take more than a wave (qkv +5..+30 %) or a row block has fewer warps (4: 8192x8192
  // +0..+6 %, 8192x28672 +9..+31 %; 1, arranged A: gate_up +24..+35 %). The H200 takes it unmeasured.
  if (m > 16 && m <= 24 && decode_m24_rule().get() != 0 && kw16 == 8 && rolling_r16_fits(INT64_MAX) &&
      rb16 * 10 >= slots * 9)
    return decode_dpf_id(3, 1, 4, true);
  // 17..24 tokens on the larger layers (N·K > 16 Mi), which take the wgmma 24-token tiles otherwise: the
  // rolling 24-token 32-row tile where its CTAs fill >= 70 % of one wave; in W4A16 only where a row block
  // has 8 warps (A through the warps' rings, each K slice copied once per CTA) streaming <= 32 chunks each;
  // W4A4 (A arranged) at any warp count and K. H100 session 42, the rule vs FP4KIT_DECODE_M24_R32=0, graph
  // us with PDL, two alternated repetitions, M = 17 / 20 / 24, W4A16 / W4A4, run 4 (200 ms samples after
  // 100 ms of warm-up, the acceptance sweep's settings; run 2's 30 ms samples agree except where noted, and
  // read 8192x8192 W4A16 at 17.88..18.18 where run 4 has 17.91 / 19.31 / 18.44):
  // qkv (192 CTAs) 11.40..11.41 -> 10.30..10.46 / 13.46..13.56 -> 10.19..10.27; 8192x8192 19.58..19.62 ->
  // 17.91..19.31 / 21.80..21.86 -> 18.95..18.98; 8192x28672 W4A4 59.58..60.13 -> 53.88..54.97; gate_up W4A4
  // (2 warps per row block) 28.98..29.05 -> 27.59 / 29.21 / 27.90 (run 2: 27.49..27.62). Left out: 8192x28672
  // W4A16 (56 chunks per warp: 56.20..57.13 -> 56.34..64.05 in run 4, though 2-6 % ahead with run 2's short
  // samples), gate_up W4A16 (2 warps: four rings per CTA copy each A chunk; +12..+15 %, run 1), down / o
  // (128 CTAs; the 16-row tile above wins). The H200 takes it unmeasured.
  if (m > 16 && m <= 24 && decode_m24_r32_rule().get() != 0 && !small_layer &&
      (w4a4 || (kw32 == 8 && chunks_per_warp(32) <= 32)) && (rb32 * kw32 + 7) / 8 * 10 >= slots * 7)
    return decode_dpf_id(3, 2, 2, true);
  // Warps per row block of the dp tiles the narrow-layer rules below pick: short K packs 8 / kw row blocks
  // per CTA (decode_host.cu); their CTAs per token pass, as decode_host.cu launches them.
  const int64_t kw = dp_warps_per_row_block(k_chunks);
  const int64_t per_pass16 = (rb16 * kw + 7) / 8, per_pass32 = (rb32 * kw + 7) / 8;
  // 33..64 tokens on narrow layers (16-row dp CTAs short of the SMs) with N·K <= 16 Mi and K >= 2048: the
  // smallest dp token tile whose passes still fit one wave of 2 CTAs per SM (16 tokens, then 24, then 16
  // tokens on 32-row blocks), instead of the wgmma tiles' split-K. H100 session 47 run 2, every tactic,
  // graph us with PDL, W4A16, M = 40 / 48 / 64, against the auto wgmma tactic: 1024x4096 4.61 / 4.57 / 5.09
  // vs 10.63 / 10.66 / 10.95 (16-token tile), 2048x2048 4.66 / 4.80 / 5.30 vs 7.03 / 7.03 / 7.36, 2048x8192
  // 11.78 / 11.75 (24-token tile) / 12.58 (16 tokens, 32 rows) vs 15.00 / 14.85 / 15.34. With K = 1024
  // (4096x1024) the dp tiles were -2..+3 %, so short K keeps wgmma; K > 14336 as at <= 32 tokens.
  // Session 49 (FP4KIT_DECODE_MID_M=0 restores the rule before: W4A16 only, at any width): W4A4 takes it too, and
  // W4A16 only up to 2048 rows. H100 session 49 run 1, the auto path with the rule in both modes against the rules
  // before, graph us with PDL, x2, M = 33..64: W4A4 0.43..0.91 at every point but 4096x2048 M = 56 / 64 (10.53 /
  // 10.62 -> 10.66 / 10.95; 1024x4096 M = 64 13.55 -> 8.49); W4A16 0.38..0.88 up to 2048 rows, but 3072x3072
  // 1.017..1.047 and 4096x2048 0.982..1.024, where the wgmma split-K tiles already keep the SMs busy.
  const bool mid_m = decode_mid_m_rule().get() != 0;
  const bool narrow_mid_mode = mid_m ? w4a4 || rb16 <= 128 : !w4a4;
  if (narrow_mid_mode && m > 32 && m <= 64 && k_chunks >= 32 && k_chunks <= 224 && small_layer &&
      decode_narrow_dp_rule().get() != 0 && decode_narrow_m8_rule().get() != 0) {
    if (per_pass16 < slots / 2) {
      if ((m + 15) / 16 * per_pass16 <= slots) return decode_dpf_id(2, 1, 4, true);
      if ((m + 23) / 24 * per_pass16 <= slots) return decode_dpf_id(3, 1, 4, true);
      if ((m + 15) / 16 * per_pass32 <= slots) return decode_dpf_id(2, 2, 4, true);
    }
  }
  // 33..48 tokens where two passes of the 32-row 24-token tile fill 90..100 % of one wave with 8 warps per row
  // block of <= 32 chunks, on layers of N·K <= 16 Mi (o): that tile instead of two passes of wgmma 128x24. H100
  // session 49 run 1, every tactic, graph us with PDL, M = 40 / 48: 4096x4096 10.13 / 10.23 vs 11.36 / 11.36
  // (W4A4 12.12 / 12.68 vs 13.81 / 13.83); at 64 tokens wgmma 128x32 stays ahead (11.66 vs 15.48 for the best
  // dp tile), and wider layers (qkv: 384 CTAs) lose 1.2..1.6x. (FP4KIT_DECODE_MID_M=0: wgmma.)
  if (mid_m && m > 32 && m <= 48 && kw32 == 8 && chunks_per_warp(32) <= 32 && small_layer) {
    const int64_t ctas = 2 * ((rb32 * kw32 + 7) / 8);
    if (ctas <= slots && ctas * 10 >= slots * 9) return decode_dpf_id(3, 2, 2, true);
  }
  // 17..32 tokens on layers of N·K > 16 Mi, K <= 14336, where the 16-row 16-token tile's passes fit one wave
  // (narrow long-K layers, e.g. 2048x14336): that tile, rolling in W4A16, plain in W4A4 (A arranged), instead of
  // the wgmma 24- / 32-token tiles' 8-way split-K. H100 session 49 run 1, every tactic, graph us with PDL, M =
  // 24 / 32: 2048x14336 W4A16 12.76 / 13.27 vs 15.70 / 16.07 for wgmma (plain tile 14.07 / 14.52), W4A4 15.16 /
  // 15.71 vs 18.42 / 18.79 (rolling 16.24 / 16.80); with K = 28672 (1024x28672) the dp tiles were 0.91..0.98 of
  // wgmma, left out. (FP4KIT_DECODE_MID_M=0: wgmma.)
  if (mid_m && m > 16 && m <= 32 && !small_layer && k_chunks <= 224 && (m + 15) / 16 * per_pass16 <= slots)
    return decode_dpf_id(2, 1, 4, !w4a4);
  if (m > 32 || (m > 16 && !small_layer)) return -1;
  const int64_t passes = m > 8 ? (m + 15) / 16 : 1;  // token tiles
  // Too few CTAs to cover the SMs (narrow layers: k / v projections): stream-K over warps, or the wgmma
  // 16-token tile, only past 16 tokens or K = 14336. Up to there the 16-row dp tiles won every point measured,
  // though their CTAs leave SMs idle. H100 session 46, graph us with PDL, W4A16 / W4A4: run 5 (auto, x2),
  // eight layers 512x512..6144x1024 at M = 1 / 4 / 8 / 16, 0.088..0.477x (1024x4096 18.73 / 18.91 / 19.16 /
  // 53.02 -> 4.12 / 4.20 / 4.24 / 4.69; 2048x2048 13.40 / 13.59 / 14.01 / 37.24 -> 4.04 / 4.54 / 4.21 / 4.62;
  // 512x512 8.74 -> 3.26 at M = 1); every tactic forced (runs 4-5, W4A16, M = 1 / 8 / 16, the dp tile this rule
  // takes vs the auto tactic before): 2048x8192 6.92 / 7.03 / 7.71 vs 14.50 / 16.38 / 18.62, 2048x14336 9.65 /
  // 10.14 / 11.02 vs 19.71 / 21.40 / 15.35 (wgmma 128x16), 1024x14336 8.38 / 8.82 / 9.66 vs 17.81 / 19.89 / 14.10.
  // (The stream-K decode's fix-up also got cheaper, decode_kernel.cuh / decode_stream_k_ctas, but stays 2-4x
  // behind.) FP4KIT_DECODE_NARROW_DP=0 restores the rule before.
  // W4A4 likewise to K = 14336 (H200 session 47 run 1, forced vs auto, graph us with PDL, M = 1 / 8 / 16:
  // 2048x8192 6.88 / 8.43 / 10.01 vs 16.27 / 18.69 / 21.90, 2048x14336 9.65 / 11.69 / 13.85 vs 20.84 /
  // 23.68 / 18.00 (wgmma 128x16), 1024x14336 8.78 / 10.13 / 12.43 vs 19.96 / 22.37 / 16.79).
  const bool narrow = rb16 * kw / 8 * passes < slots / 2;
  if (narrow && (k_chunks > 224 || decode_narrow_dp_rule().get() == 0)) return -1;
  // 9..32 tokens on narrow layers: the rolling 8-token 16-row tile in ceil(M / 8) passes, whose CTAs (one per
  // pass) fill more of the SMs than the 16-token tile's, or the wgmma tiles' at 17..32. Its passes re-read
  // the weights, mostly from L2. H200 session 47 run 1, graph us with PDL, W4A16: forced against the auto
  // tactic, M = 12 / 16: 1024x4096 4.33 / 4.36 vs 4.69 / 4.67 (W4A4 6.26 / 6.23 vs 6.26 / 6.24),
  // 2048x14336 10.25 / 10.52 vs 10.54 / 10.70 (W4A4 12.64 / 12.66 vs 13.85 for the 16-token tile at 16);
  // every tactic, M = 20 / 24 / 32: 1024x4096 3.93 / 3.92 / 4.13 vs 11.66 / 11.78 / 12.08 (wgmma 128x24 /
  // 128x32), 2048x2048 4.00 / 3.97 / 4.15 vs 5.73 / 5.74 / 6.06, 4096x1024 4.68 / 4.69 / 4.73 vs 4.87 /
  // 4.88 / 5.07. FP4KIT_DECODE_NARROW_M8=0 restores the 16-token tile at 9..16 and wgmma at 17..32.
  if (narrow && m > 8 && decode_narrow_m8_rule().get() != 0) return decode_dpf_id(1, 1, 4, true);
  if (narrow && m > 16) return -1;
  // 32-row blocks (two row tiles share each activation load) as long as their CTAs still cover
  // every SM once; else 16-row blocks (H100 session 3, M = 1: 6144x4096 13.2 vs 14.6 us and
  // 28672x4096 35.5 vs 39.5 for r32; 4096x4096 9.95 vs 11.1 and 4096x14336 20.1 vs 23.0 for r16;
  // session 5, M = 5: 4096x4096 6.9 vs 8.2 us, 4096x14336 15.9 vs 18.2 for r16).
  const bool r32 = rb32 * kw / 8 * passes >= slots / 2;
  // 9..16 tokens: one 16-token tile reading A in B-fragment order (arranged first), 32-row blocks
  // when their CTAs cover every SM, else 16-row blocks with 4-chunk load groups. H100 session 6,
  // graph replay, M = 9..16 (docs/PERF.md): 8192x28672 54.2-54.7 us vs 55.0-58.1 for the best
  // earlier tactic, 8192x8192 18.6-18.9 vs 18.2-23.4, 6144x4096 9.9-10.0 vs 10.4-13.6, 4096x4096
  // 8.4-8.6 vs 8.5-9.6 (r16), 4096x14336 19.1-19.7 vs 21.6 (r16); 28672x4096 29.2-29.5 vs 28.9-29.1
  // for wgmma 256x16 (the one shape that loses, by 1.5 %).
  // With 32-row blocks, twice the weight bytes in flight per warp (4-chunk groups) when the grid is
  // short of one full wave of 2 CTAs per SM, so that SMs left with one CTA still stream enough
  // (session 6, M = 9..16: 28672x4096 28.2 -> 27.1 us, 6144x4096 9.9 -> 9.4; with a full wave the
  // 2-chunk groups stay faster: 8192x8192 18.5 vs 20.0, 8192x28672 53.1 vs 53.6).
  // W4A16 16-token tiles that read A through the warps' rings (8 warps per row block, one pass):
  // rolling load groups whatever the warps' K ranges, since the ring's bookkeeping got cheap
  // (session 18 run 4, forced, graph us, M = 9 / 12 / 16: down 14.10 / 14.14 / 14.52 for the rolling
  // 16-row tile vs 15.78 / 15.83 / 16.09 for the plain one, qkv 8.12 / 8.11 / 8.02 vs 8.46 / 8.56 /
  // 8.50 and 8192x28672 47.26 / 47.00 / 47.25 vs 50.20 / 48.43 / 48.22 for the rolling 32-row tile).
  auto ring_roll16 = [&](int64_t kw) { return !w4a4 && passes == 1 && kw == 8; };
  if (m > 8) {
    if (!r32) return decode_dpf_id(2, 1, 4, decode_roll(2, 1, chunks_per_warp(16)) || ring_roll16(kw16));
    const int64_t ctas = (rb32 * kw32 + 7) / 8 * passes;
    // W4A16 where the CTA's 8 warps stream 8 K slices reads A through the warps' shared-memory rings
    // (decode_host.cu ring_a), and there the 4-chunk groups win with a full wave too (session 17,
    // H100, every tactic forced, graph us, M = 12 / 16: 8192x28672 49.1 / 50.5 for u4 vs 52.2 / 52.3
    // for u2, 8192x8192 16.7 / 16.5 vs 17.3 / 17.4; 17..32 tokens, two passes, not measured).
    // HBM-rich devices (H200): W4A4 with long warp K ranges takes the rolling 4-chunk groups too
    // (session 19 run 3, forced, graph us, 8192x28672 M = 12 / 16: 44.49 / 45.04 vs 46.58 / 46.49 for
    // the 2-chunk groups; 8192x8192's 16-chunk ranges keep them).
    // (Only where the full wave would take 2-chunk groups: grids short of a wave keep their rule.)
    const bool short_wave = ctas * 10 < slots * 9;
    const bool rich_roll = rich && w4a4 && passes == 1 && !short_wave && chunks_per_warp(32) > 32;
    const bool u4 = short_wave || ring_roll16(kw32) || rich_roll;
    return u4 ? decode_dpf_id(2, 2, 4, decode_roll(2, 2, chunks_per_warp(32)) || ring_roll16(kw32) || rich_roll)
              : decode_dpf_id(2, 2, 2);
  }
  // 6..8 tokens (5, see below): the 8-token tile on A in fragment order as well; below that the arrangement kernel
  // costs more than the 8 token rows' gathers (H100 session 6, graph replay, M = 8 vs M = 4:
  // 8192x28672 49.7 vs 51.1 us but 49.4 vs 48.3; 8192x8192 16.9 vs 17.3 but 16.7 vs 15.8; 4096x14336
  // 16.9 vs 20.6; 4096x4096 7.3 vs 8.3 but 7.2 vs 6.5; W4A4 at M = 8 3-20 % faster).
  // With rolling groups the 16-row tile also wins where the 32-row one covered the SMs, if it fits
  // one wave with short K ranges (H100 session 15, forced, graph us, M = 6 / 8: 8192x8192 15.51 /
  // 15.61 vs 16.27 / 16.28 (W4A4 17.40 / 17.26 vs 18.14 / 17.80); gate_up at 64 chunks per warp
  // keeps the 32-row tile: 25.07 / 25.21 vs 24.61 / 24.77).
  // 5 tokens as well, unless each warp's K range is long (run 213, forced, graph us, M = 5, W4A16 /
  // W4A4: down 14.45 / 16.62 vs 15.54 / 18.58 for the dp tile, o 6.42 / 7.57 vs 6.78 / 8.91, gate_up
  // 24.48 / 25.81 vs 25.22 / 27.06, qkv 7.76 / 9.30 vs 7.77 / 10.90; 8192x28672, 56 chunks per warp:
  // 49.07 vs 48.04 W4A16).
  // W4A4 from 3 tokens on, everywhere: its NVFP4 A is decoded by a kernel in front either way (the
  // staging kernel for the dp tiles, the arrangement for these), and since the arrangement issues
  // all its loads at once (session 16) it is the cheaper one (H100 run 10 of session 16, forced,
  // graph us with PDL, M = 3 / 4 / 5, auto before -> the tile this rule picks: down 16.50 / 16.92 /
  // 15.30 -> 15.36 / 15.34 / 15.35, gate_up 26.26 -> 24.82 at M = 3, qkv 9.71 -> 8.32 at M = 3,
  // o 7.03 -> 6.33, 8192x28672 49.13 / 50.44 / 50.80 -> 49.66 / 49.55 / 49.43, 8192x8192 +-0.5 %;
  // at 1..2 tokens the dp tiles stay ahead except qkv M = 2).
  // W4A16 from 3 tokens on where the tile below reads A through the warps' rings (8 warps per row
  // block, decode_host.cu ring_a), no arrangement kernel in front, and it is the rolling 16-row tile
  // or each warp's K range is long (> 32 chunks). H100 session 17 run 10 (auto, graph us): 8192x28672
  // M = 4 / 5 47.35 / 47.69 -> 46.17 / 46.23, o M = 4 6.08 -> 5.75 (not for qkv's 32-row tile with
  // 8-chunk ranges: +2.4 %); session 18 run 4 (forced, with the cheaper ring), M = 3: down 12.90 vs
  // 13.44 for the row-major rolling tile, o 5.27 vs 5.51, qkv 6.81 vs 7.25 (16-row ring tile, next
  // rule), 8192x28672 45.30 vs 48.56 (rolling 32-row ring tile, below).
  const bool ring = !w4a4 && m >= 3 && [&] {
    const bool r16_roll = rolling_r16_fits(32);
    const int64_t kw = r16_roll || !r32 ? kw16 : kw32;
    return kw == 8 && (r16_roll || k_chunks / kw > 32);
  }();
  // W4A16 at 3..8 tokens where the 32-row tile would be chosen but the 16-row one reads A through
  // rings (8 warps per row block) in at most two waves: the plain 16-row ring tile (qkv; session 17,
  // every tactic forced with the rings, graph us, M = 4 / 5: 7.26 / 7.30 vs 7.57 / 7.59 for the
  // 32-row tile).
  if (!w4a4 && m >= 3 && r32 && !rolling_r16_fits(32) && kw16 == 8 && rb16 <= 2 * slots)
    return decode_dpf_id(1, 1, 4, false);
  // W4A16, 8192x8192-like layers (the rolling 16-row tile fits, but with fewer than 8 warps per row
  // block it would need the arrangement, while the 32-row tile streams >= 16 chunks per warp through
  // rings): the 32-row ring tile from 4 tokens on. H100 session 17 run 14 (forced, graph us, M = 5 / 6
  // / 8): 8192x8192 15.02 / 14.91 / 14.87 vs 15.52 / 15.42 / 15.44 (8192x4096, 8 chunks per warp: 8.96
  // vs 8.77, kept); session 18 run 4, M = 4: 14.30 vs 14.88 for the row-major rolling 16-row tile (at 3
  // tokens 14.34 vs 14.03, kept).
  const bool r32_ring_over_arranged_r16 =
      !w4a4 && r32 && kw16 < 8 && kw32 == 8 && chunks_per_warp(32) >= 16 && rolling_r16_fits(32);
  // HBM-rich devices (H200) take that tile from 1 token on: its warps stream twice the weight bytes
  // per chunk step of the 16-row tile's (session 19 run 3, forced, graph us, 8192x8192 M = 1 / 2 / 3:
  // 11.59 / 11.63 / 11.96 vs 11.70 / 12.35 / 13.12 for the row-major rolling 16-row tile).
  // W4A4 at 3..8 tokens where the 32-row tiles' CTAs stream 8 K slices of >= 16 chunks: the rolling
  // 32-row tile on the NVFP4 ring (w4a4_ring_enabled, decode_host.cu ring_a), no arrangement kernel in
  // front. H100 session 23 run 4 (graph us with PDL, medians of 3, arranged tile -> this one): 8192x8192
  // M = 3..8 16.42-16.53 -> 15.67-15.77 (tactic 51 before), 8192x28672 49.11-49.20 -> 48.58-48.97 (31).
  // Not on the other tiles: the per-warp A decode doubles the loop's instructions (SASS: 52 590 -> 960
  // per 4-chunk turn), which only the 32-row tile's two row tiles amortize (ring for every frag tile,
  // same run: down M = 3..8 +12 % on the 16-row tile, qkv +42 %, 16-token tiles +20..+47 %).
  if (w4a4 && bf16_out && m >= 3 && w4a4_ring_enabled(rich) && r32 && kw32 == 8 && chunks_per_warp(32) >= 16)
    return decode_dpf_id(1, 2, 4, true);
  if (m >= 6 || (m == 5 && chunks_per_warp(r32 ? 32 : 16) <= 32) || (w4a4 && m >= 3) || ring ||
      ((m == 4 || rich) && r32_ring_over_arranged_r16)) {
    if (r32_ring_over_arranged_r16) return decode_dpf_id(1, 2, 4, decode_roll(1, 2, chunks_per_warp(32)));
    if (rolling_r16_fits(32)) return decode_dpf_id(1, 1, 4, true);
    // (W4A16 ring with 32-row blocks: rolling also on long K ranges; session 18 runs 4-5, forced,
    // graph us, 8192x28672 M = 3 / 4 45.30 / 45.49 vs 47.05 / 46.95, M = 5 / 6 / 8 46.24 / 45.41 / 45.42
    // vs 46.34 / 46.19 / 46.39 for the plain tile.)
    return decode_dpf_id(1, r32 ? 2 : 1, 4,
                         decode_roll(1, r32 ? 2 : 1, chunks_per_warp(r32 ? 32 : 16)) || (ring && r32));
  }
  // 1..2 tokens: 16-row blocks with rolling load groups whenever their CTAs fit one wave and each
  // warp's range is not long (H100 session 15, M = 1, graph us: 8192x8192 13.5 vs 14.7 for the
  // plain 32-row blocks, gate_up 22.8 vs 24.0, down 12.3 vs 13.1, o 5.0 vs 5.5; qkv (1.5 waves of
  // 16-row CTAs) and 8192x28672 (112 chunks per warp) keep the plain tiles). 3..4 tokens (W4A16; W4A4
  // takes the fragment-order tiles above) only up to 32 chunks per warp (run 210, M = 3 / 4 W4A16:
  // 8192x8192 13.99 / 14.77 vs 15.14 / 15.49 for r32, down 13.36 / 14.17 vs 13.71 / 14.56, o 5.53 / 6.08 vs 5.96 / 6.36; gate_up at 64
  // chunks lost from 4 tokens on, 8192x8192 W4A4 at 4 tokens +3.5 %, everything at 5).
  // HBM-rich devices (H200), 1..2 tokens (session 19 run 3, forced, graph us): W4A4 where the 16-row
  // tile's warps each take whole row blocks (kw = 1, gate_up) takes the rolling 32-row tile, whose two
  // row tiles share each decoded activation fragment (gate_up M = 1 / 2: 19.61 / 21.08 vs 20.59 / 21.83
  // for the rolling 16-row tile; only where that tile fits one wave with <= 64 chunks per warp, as
  // there); and the rolling 16-row tile also with long warp K ranges (8192x28672,
  // 112 chunks per warp: W4A16 M = 1 / 2 34.62 / 35.21 vs 35.64 / 35.93 for the plain 32-row tile, W4A4
  // 36.94 / 38.08 vs 38.44 / 38.74).
  if (rich && m <= 2) {
    if (w4a4 && r32 && kw16 == 1 && rolling_r16_fits(64)) return decode_dp_id(1, 2, 4, true);
    if (rolling_r16_fits(INT64_MAX)) return decode_dp_id(1, 1, 4, true);
  }
  if (m <= 4 && rolling_r16_fits(m <= 2 ? 64 : 32)) return decode_dp_id(1, 1, 4, true);
  // W4A4 at 1..2 tokens with A decoded inside the GEMM (each warp its K slice, K <= 16384,
  // decode_host.cu): the rolling variant of the 32-row tile, whose loads are in flight while a warp
  // decodes its slice (H100 session 27 run 8, forced, graph us with PDL, medians of 3: qkv M = 1 / 2
  // 7.15 / 7.36 vs 7.33 / 7.61 for the plain tile; with the staging kernel (8192x28672) the two are
  // equal: 46.41 / 46.95 vs 46.49 / 46.85, not taken). The H200 takes it unmeasured.
  if (w4a4 && m <= 2 && r32 && k <= 16384) return decode_dp_id(1, 2, 4, true);
  return decode_dp_id(1, r32 ? 2 : 1, 4);
}

// Active groups expected when `rows` rows are routed uniformly over `groups` groups.
static double expected_active_groups(int64_t groups, int64_t rows) {
  const double g = double(std::max<int64_t>(groups, 1));
  return std::min(double(std::min(groups, rows)), g * (1.0 - std::pow(1.0 - 1.0 / g, double(rows))));
}

int grouped_dp_warps_per_row_block(int64_t groups, int64_t rows, int64_t row_blocks, int64_t k_chunks, int unroll,
                                   int sms, int ctas_per_sm) {
  sms = sms > 0 ? sms : 132;
  ctas_per_sm = std::max(ctas_per_sm, 1);
  const double active = expected_active_groups(groups, rows);
  // Few active groups: their actual count swings the CTA count across wave boundaries, so keep the
  // k-only rule, whose many short CTAs are robust to it (H100: Mixtral T = 2, fi-32 T = 2 lost 6-10 %
  // with the model's choice).
  if (active < 16.0) return int(dp_warps_per_row_block(k_chunks));
  int best_kw = 1;
  double best = -1.0;
  for (int kw = 1; kw <= 8; kw *= 2) {
    const double groups_per_warp = double(k_chunks) / kw / std::max(unroll, 1);
    if (kw > 1 && groups_per_warp < 1.0) break;  // every warp streams at least one full load group
    const double ctas = std::max(1.0, active * double((row_blocks * kw + 7) / 8));
    const double per_sm = ctas / sms;
    const double waves = ctas / (double(sms) * ctas_per_sm);
    const double tail = waves >= 1.0 ? waves / std::ceil(waves) : per_sm / std::ceil(per_sm);
    const double warps_per_sm = std::min(per_sm, double(ctas_per_sm)) * 8.0;
    const double fill = std::min(1.0, warps_per_sm / 16.0);
    const double stream = groups_per_warp / (groups_per_warp + 1.5);
    const double score = tail * fill * stream;
    if (score > best + 1e-9) {
      best = score;
      best_kw = kw;
    }
  }
  return best_kw;
}

bool grouped_dp_balanced(int64_t groups, int64_t rows, int64_t row_blocks, int kw, int sms, int ctas_per_sm) {
  if (kw != 1) return false;
  const double warps = double(sms > 0 ? sms : 132) * std::max(ctas_per_sm, 1) * 8.0;
  return expected_active_groups(groups, rows) * double(row_blocks) >= 3.0 * warps;
}

int64_t wgmma_k_splits(int64_t tiles, int64_t k_chunks, int sms) {
  const int64_t cap = std::clamp<int64_t>(k_chunks / 4, 1, 16);
  return std::clamp<int64_t>(int64_t(sms > 0 ? sms : 132) / std::max<int64_t>(tiles, 1), 1, cap);
}

// Chunks of K per split-K unit of a dense wgmma tile choice.
static int64_t wgmma_chunks_per_unit(const GemmParams& p, int bn, int bm, int sms) {
  const int64_t tiles = ((p.n + bn - 1) / bn) * ((p.m + bm - 1) / bm);
  const int64_t k_chunks = (p.k + 63) / 64;
  return k_chunks / wgmma_k_splits(tiles, k_chunks, sms);
}

int64_t wgmma_short_k_splits(int64_t ks, int64_t tiles, int64_t k_chunks, int sms,
                             const std::function<int64_t(int)>& resident) {
  if (k_chunks > 32) return ks;
  const auto fits = [&](int64_t c) { return resident(int(c)) >= tiles; };  // one cluster of c CTAs per tile
  while (ks > 2 && (ks & (ks - 1)) == 0 && tiles * ks <= sms && !fits(ks) && fits(ks / 2)) ks /= 2;
  return ks;
}

int64_t wgmma_split_tail_dp_tiles(int64_t tiles, int64_t k_chunks, int64_t grid) {
  if (grid < 2 || grid % 2 != 0 || k_chunks < 8) return -1;
  const int64_t dp_tiles = tiles / grid * grid, tail = tiles - dp_tiles;
  if (dp_tiles == 0 || tail == 0 || 2 * tail > grid) return -1;
  return dp_tiles;
}

int without_split_tail(int id) {
  const Tactic* t = find_tactic(id);
  if (t == nullptr || !t->split_tail) return id;
  const int base = wgmma_id(t->block_n, t->block_m, t->stages);
  return base >= 0 ? base : id;
}

RuleOverride& wgmma_split_tail_rule() {
  static RuleOverride o("FP4KIT_WGMMA_SPLIT_TAIL");
  return o;
}

RuleOverride& decode_narrow_dp_rule() {
  static RuleOverride o("FP4KIT_DECODE_NARROW_DP");
  return o;
}

RuleOverride& decode_narrow_m8_rule() {
  static RuleOverride o("FP4KIT_DECODE_NARROW_M8");
  return o;
}

RuleOverride& decode_m24_rule() {
  static RuleOverride o("FP4KIT_DECODE_M24");
  return o;
}

RuleOverride& decode_mid_m_rule() {
  static RuleOverride o("FP4KIT_DECODE_MID_M");
  return o;
}

RuleOverride& wgmma_narrow_one_pass_rule() {
  static RuleOverride o("FP4KIT_WGMMA_NARROW_ONE_PASS");
  return o;
}

RuleOverride& decode_m24_r32_rule() {
  static RuleOverride o("FP4KIT_DECODE_M24_R32");
  return o;
}

RuleOverride& wgmma_pair_step_rule() {
  static RuleOverride o("FP4KIT_WGMMA_PAIRS");
  return o;
}

RuleOverride& wgmma_split_shrink_rule() {
  static RuleOverride o("FP4KIT_WGMMA_SPLIT_SHRINK");
  return o;
}

RuleOverride& wgmma_four_split_one_pass() {
  static RuleOverride o("FP4KIT_WGMMA_4SPLIT_ONE_PASS");
  return o;
}

// 9..128 tokens, where the weight stream (not the MMA) bounds the time: the wgmma family with
// token tiles no larger than needed and split-K to fill the SMs. Rules from H100, W4A16, bench gemm
// --tactic all over the six bench shapes (docs/PERF.md, session 3):
//  *  9..32: token tile 16 or 32 (8192x28672 M=16: 63.3 us vs 89.1 for the dp decode tile; M=32:
//     71.9 vs 91.7 for 128x64); 256 weight rows (two slabs per warp, more loads in flight) when
//     the split K ranges stay long (>= 64 chunks), else 128 (short ranges pay for the split-K
//     partials and an unfilled pipeline: 4096x4096 M=16 16.8 vs 14.2 us).
//  * 33..64: 128x64, or 128x32 when 128x64 would cut K into ranges shorter than 32 chunks
//    (4096x4096 M=64: 12.8 vs 20.2 us); 256x64 when its tiles fit one wave and 128x64's do not
//    (session 12: 28672x4096 M=64 36.4 vs 40.6 us).
//  * 65..128: 128x128 s6 when its tiles fit one wave with at most 2 K splits of >= 32 chunks
//    (session 12, M = 96 / 128: 8192x8192 30.3 / 31.0 vs 39.6 / 38.9 us for 128x64, 6144x4096 18.9
//    / 19.0 vs 21.0 / 21.0), else the full-wave model (wave_model_tactic: 128x64 on 4096x4096 and
//    4096x14336, whose 128x128 tiles would need 4 splits).
//    Session 39: also with 4 K splits when they stay >= 32 chunks (4096x14336), since the workspace
//    partials are coalesced (c972c90): one pass of the fitted tile beats the model's two passes of
//    128x48 / 128x64 (H100 graph us with PDL, W4A16 / W4A4, docs/PERF.md session 39 run 2: down
//    M = 65 36.06 / 36.94 -> 28.33 / 30.24, M = 96 32.30 / 35.25 -> 28.61 / 31.75, M = 128 34.63 /
//    37.87 -> 32.66 / 35.85). 4096x4096 (16-chunk ranges) keeps the model (one pass forced: +13..+40 %).
//    FP4KIT_WGMMA_4SPLIT_ONE_PASS=0 restores the 2-split rule (A/B runs).
//  * 129..256 on layers whose tiles leave SMs free (split-K regime): 128x256 when at most 2 K
//    splits of >= 64 chunks cover the SMs, else 128x128 s6 (session 12, M = 192 / 256: 8192x28672
//    157.7 / 154.7 vs 202.5 / 193.7 us for the full-wave model's 128x128 s4, 8192x8192 46.9 / 49.3
//    vs 54.3 / 53.5; 4096x14336 48.8 / 49.3 vs 65.2 / 65.0 for 128x64, 4096x4096 19.8 / 18.8 vs
//    20.9 / 21.0).
// The rules from session 12 on assume split-K through clusters (wgmma_host.cu), where a split
// costs little; the workspace fallback is slower.
// M <= 8 stays on the dp decode family (8192x28672 M=1: 57.5 us vs 69.6 for the best wgmma tile;
// 28672x4096 M = 1 / 8: 24.4 / 27.5 us with dense_dp_warps_per_row_block vs 29.0 / 28.8 for 256x16).
// Since the decode loop's instruction cut (session 5), 9..16 tokens on layers with K <= 8192 and
// N <= 8192 go back to the dp decode family's 16-token tile (H100 graph replay, M = 12 / 16:
// 6144x4096 11.6 / 13.3 us vs 15.5 / 15.2 for the best wgmma tile, 4096x4096 10.3 / 10.9 vs
// 11.6 / 11.6, 8192x8192 20.4 / 23.5 vs 23.3 / 23.5); long K (4096x14336, 8192x28672) and wide N
// (28672x4096) keep the wgmma tiles.
// Session 6: 9..16 tokens take the dp decode family whenever its CTAs fill the GPU (A in fragment
// order, decode_dp_heuristic), whatever K and N.
// Whether wgmma_pair_step_tactic maps tiles to their two-stage pair (tactics.h, wgmma_pair_step_rule). On the
// H200 too since session 47 (run 1, the rule vs FP4KIT_WGMMA_PAIRS=0, every shape + 8192x16384, M = 20..128,
// both modes, graph us with PDL at the acceptance's timing, x2: the 44 points it changes 0.962..1.013, e.g.
// 8192x8192 M = 28 / 32 W4A4 22.31 / 22.38 -> 21.48 / 21.52, llama8b.o M = 64 W4A16 12.02 -> 11.63; worst
// llama8b.down M = 64 24.87 -> 25.18).
static bool pair_steps_on() { return wgmma_pair_step_rule().get() != 0; }

static int small_m_wgmma_heuristic(const GemmParams& p, int sms) {
  if (p.m > 128) return -1;
  if (p.m <= 8) return -1;
  sms = sms > 0 ? sms : 132;
  if (p.m <= 64 && decode_dp_heuristic(p.m, p.n, p.k, sms, p.a_dtype == DType::kE2M1x2) >= 0) return -1;
  if (p.m <= 16 && p.k <= 8192 && p.n <= 8192) return -1;
  if (p.m <= 32) {
    const int bm = p.m <= 16 ? 16 : 32;
    int bn = wgmma_chunks_per_unit(p, 256, bm, sms) >= 64 ? 256 : 128;
    // Session 45: 17..32 tokens take 128 rows where those tiles fit one wave with split-K units of 64..128
    // chunks, when the pair rule then gives them two stages per step on a 12-stage ring. H100, graph us with
    // PDL, two alternated repetitions, W4A16 / W4A4 (docs/PERF.md session 46 run 3, the auto path against
    // FP4KIT_WGMMA_PAIRS=0 at the acceptance's timing: 200 ms samples after 100 ms of warm-up): 8192x16384
    // (2 splits of 128 chunks) M = 28 / 32 37.83 / 37.93 -> 35.72 / 36.77, 40.59 / 40.66 -> 36.86 / 37.20.
    // Longer units lost there: 8192x28672 (2 splits of 224) M = 17 / 20 / 24 57.96 / 58.52 / 59.03 -> 56.47 /
    // 60.13 / 62.06 (W4A16), M = 28 / 32 0.989..1.017, its SM clock ~1770 MHz against ~1930 for the 256-row
    // tile — though 60 ms samples had it 2-4 % ahead (session 45 run 3, session 46 run 1).
    if (bn == 256 && bm == 32 && pair_steps_on() && (p.n + 127) / 128 <= sms) {
      const int64_t unit = wgmma_chunks_per_unit(p, 128, bm, sms);
      if (unit >= 64 && unit <= 128) bn = 128;
    }
    return wgmma_id(bn, bm, 8);
  }
  if (p.m <= 64) {
    // 256x64 where its tiles fit one wave and 128x64's would need a second (wide layers: half the
    // activation re-reads per weight byte, no split-K). H100, session 12, graph us, M = 48 / 64:
    // 28672x4096 36.9 / 36.4 vs 40.1 / 40.6 for 128x64; with split-K (N = 8192) it loses
    // (8192x8192 41.8 vs 31.3, 8192x28672 84.4 vs 76.8).
    const int64_t n128 = (p.n + 127) / 128, n256 = (p.n + 255) / 256;
    if (n256 <= sms && n128 > sms) return wgmma_id(256, 64, 8);
    // 33..48 tokens on narrow layers (<= 16 tiles of 128 rows) of N·K > 16 Mi, which the dp rules leave to
    // wgmma: one pass of 128x64 (fitted to 48 tokens, 8 K splits) instead of two of 128x24 (4 splits): the
    // second pass decodes every weight again. H100 session 49 run 1, every tactic, graph us with PDL, M = 48:
    // 2048x14336 16.59 (s8) / 16.88 (s8 pairs, the pick) vs 20.81 (W4A4 19.69 vs 23.66), 1024x28672 19.33 /
    // 19.52 vs 21.82 (W4A4 22.73 / 22.81 vs 25.14). 49..64 unmeasured. (FP4KIT_WGMMA_NARROW_ONE_PASS=0: 128x32.)
    if (p.m <= 48 && n128 <= 16 && p.n * p.k > (int64_t(16) << 20) && wgmma_narrow_one_pass_rule().get() != 0)
      return wgmma_id(128, 64, 6);
    return wgmma_chunks_per_unit(p, 128, 64, sms) >= 32 ? wgmma_id(128, 64, 6) : wgmma_id(128, 32, 8);
  }
  const int64_t k_chunks = (p.k + 63) / 64;
  const int64_t n128 = (p.n + 127) / 128;
  const int max_splits = wgmma_four_split_one_pass().get() == 0 ? 2 : 4;
  if (n128 <= sms && wgmma_k_splits(n128, k_chunks, sms) <= max_splits &&
      wgmma_chunks_per_unit(p, 128, 128, sms) >= 32)
    return wgmma_id(128, 128, 6);
  return -1;
}

// 129..256 tokens where the tiles leave SMs free (the rules above small_m_wgmma_heuristic).
static int mid_m_wgmma_heuristic(const GemmParams& p, int sms) {
  if (p.m <= 128 || p.m > 256) return -1;
  sms = sms > 0 ? sms : 132;
  const int64_t k_chunks = (p.k + 63) / 64;
  const int64_t n128 = (p.n + 127) / 128;
  if (n128 < sms && wgmma_k_splits(n128, k_chunks, sms) <= 2 && wgmma_chunks_per_unit(p, 128, 256, sms) >= 64)
    return wgmma_id(128, 256, 4);
  // Session 13: up to 224 tokens one fitted tile (128 x 144..224, heuristic_tactic narrows this
  // 128x256) also pays with shorter K ranges, as long as the split stays a cluster of 2 (H100 graph
  // us, 6144x4096 M = 144 / 160 / 192 / 224: 20.2 / 20.8 / 22.8 / 26.0 vs 28.6 / 27.4 / 27.0 / 26.8 for
  // 128x128 s6). With 4 splits (4096x4096, 4096x14336: 32 tiles) 128x128 s6 stays faster (down M =
  // 144: 48.8..50.9 vs 55.9 for 128x144; o 26.1 vs 34.4), 4-CTA clusters not all fitting.
  if (p.m <= 224 && n128 < sms && wgmma_k_splits(n128, k_chunks, sms) <= 2 && wgmma_chunks_per_unit(p, 128, 256, sms) >= 16)
    return wgmma_id(128, 256, 4);
  if (n128 * ((p.m + 127) / 128) <= sms) return wgmma_id(128, 128, 6);
  return -1;
}

// Session 13: a wgmma tile keeps its weight rows but takes 24 / 48 / 80, 96, 112 / 144, 160, 192, 224
// tokens instead of 32 / 64 / 128 / 256 where M fits them (17..24, 33..48, 65..112, 129..224): the tensor cores' time adds to the decode's on Hopper (docs/GEMM.md
// "Decode and wgmma do not overlap"), so the padded tokens cost real time. Same tiles, same split-K.
// Session 24: likewise where up to 256 tokens take two token tiles (M = 33..48 on a 32-token tile,
// 65..96 on 64, 129..224 on 128): two passes of the narrower tile that holds half of M, the same
// number of tiles and so the same split-K. It only moves the 4096-row layers (their 128-token tiles
// keep two passes to avoid 4-way splits). H100, W4A16, graph us, old -> new choice in one process
// (docs/PERF.md session 24): 4096x4096 M = 48 / 96 / 144 / 192 / 224 12.2 / 14.0 / 26.2 / 20.8 /
// 18.4 -> 11.8 / 12.8 / 14.8 / 15.7 / 17.0, 4096x14336 M = 96 / 144 / 192 / 224 35.9 / 47.7 / 47.6 /
// 51.0 -> 34.1 / 37.7 / 41.0 / 45.3; W4A4 likewise.
int fit_token_tile(int id, int64_t m) {
  const Tactic* t = find_tactic(id);
  if (t == nullptr || t->family != Family::kWgmma || t->stream_k || t->split_tail || m <= t->block_m / 2) return id;
  const int64_t passes = m <= t->block_m ? 1 : m <= 2 * t->block_m && m <= 256 ? 2 : 0;
  if (passes == 0) return id;
  const int64_t per_pass = (m + passes - 1) / passes;
  // Narrower token tiles of each chosen one, narrowest first (each instantiated with one stage count).
  struct Fit { int from, to; };
  static constexpr Fit kFits[] = {{32, 24}, {64, 48}, {128, 80}, {128, 96}, {128, 112},
                                  {256, 144}, {256, 160}, {256, 192}, {256, 224}};
  for (const Fit& f : kFits) {
    if (f.from != t->block_m || per_pass > f.to) continue;
    for (const Tactic& c : tactic_table())
      if (c.family == Family::kWgmma && !c.stream_k && !c.split_tail && c.block_n == t->block_n && c.block_m == f.to &&
          c.step_chunks == t->step_chunks && (t->step_chunks == 1 || c.stages == t->stages))
        return c.id;
  }
  return id;
}

static int untrimmed_heuristic_tactic(const GemmParams& p, int sm_count, bool rich);

int wgmma_pair_step_tactic(int id, const GemmParams& p, int sms) {
  const Tactic* t = find_tactic(id);
  if (!pair_steps_on() || t == nullptr || t->family != Family::kWgmma || t->stream_k || t->split_tail ||
      t->step_chunks != 1 || t->block_n != 128 || t->block_m > 64)
    return id;
  // Measured from 16 chunks per split-K unit up (o one pass, 4 splits of K = 4096); shorter ranges are
  // mostly pipeline fill and keep one stage per step.
  const int64_t chunks = wgmma_chunks_per_unit(p, 128, t->block_m, sms);
  if (chunks < 16) return id;
  const int pair = wgmma_id(128, t->block_m, chunks <= 32 ? 8 : 12, false, 2);
  return pair >= 0 ? pair : id;
}

int heuristic_tactic(const GemmParams& p, int sm_count, bool rich) {
  return wgmma_pair_step_tactic(fit_token_tile(untrimmed_heuristic_tactic(p, sm_count, rich), p.m), p,
                                sm_count > 0 ? sm_count : 132);
}

static int untrimmed_heuristic_tactic(const GemmParams& p, int sm_count, bool rich) {
  if (const int id = small_m_wgmma_heuristic(p, sm_count); id >= 0) return id;
  if (const int id = mid_m_wgmma_heuristic(p, sm_count); id >= 0) return id;
  // The dp decode family wherever its CTAs fill the GPU: up to 16 tokens, up to 32 on small layers.
  if (const int id = decode_dp_heuristic(p.m, p.n, p.k, sm_count, p.a_dtype == DType::kE2M1x2, rich,
                                         p.d_dtype == DType::kBF16); id >= 0)
    return id;
  // H100 measurements (docs/PERF.md): above 16 tokens the wgmma family's 128x64 tile already beats
  // the decode family's 32-token tiles. (W4A4 decodes A into the workspace first in both families,
  // so it follows the same rule.)
  if (p.m > 256) return wave_model_tactic(p, sm_count, kWideWaveCands, true);
  if (p.m > 16) {
    const int id = wave_model_tactic(p, sm_count, kWaveCands, false);
    if (id >= 0) return id;
  }
  // Few row blocks (narrow layers): stream-K over warps. Two row tiles per warp halve the
  // activation loads per weight byte, but leave too few units to balance small layers.
  const bool small_layer = p.n * p.k < int64_t(32) << 20;
  if (p.m <= 8) return small_layer ? decode_id(1, 1, 4) : decode_id(1, 2, 4);
  if (p.m <= 16) return decode_id(2, 2, 2);
  return decode_id(4, 2, 1);
}

}  // namespace fp4kit::gemm_impl
