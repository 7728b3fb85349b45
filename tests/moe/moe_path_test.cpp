// fused_moe path selection (MoeParams::path, src/moe/moe_path.h): validation of the field, the
// per-entry path's limits, the kAuto rule, and one workspace for both paths. CPU only: every
// fused_moe call here fails validation, so the fake device pointers are never used.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "fp4kit/moe.h"
#include "moe/fused_decode.h"
#include "moe/moe_path.h"
#include "moe/per_entry.h"

namespace {

using namespace fp4kit;

template <typename T = void>
T* fake(uintptr_t addr) {
  return reinterpret_cast<T*>(addr);
}

MoeParams params(int64_t T, int64_t H, int64_t I, int64_t E, int64_t k) {
  MoeParams p;
  p.num_tokens = T;
  p.hidden = H;
  p.inter = I;
  p.num_experts = E;
  p.top_k = k;
  p.input = fake(0x10000);
  p.selected_experts = fake<const int32_t>(0x20000);
  p.final_scales = fake<const float>(0x30000);
  p.fc1_weights = fake(0x100000);
  p.fc1_weights_bytes = moe_prepacked_weight_bytes(E, 2 * I, H);
  p.fc2_weights = fake(0x800000);
  p.fc2_weights_bytes = moe_prepacked_weight_bytes(E, H, I);
  p.fc1_alpha = fake<const float>(0x40000);
  p.fc2_alpha = fake<const float>(0x50000);
  p.output = fake(0x90000);
  return p;
}

void expect_error(const Status& s, StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos) << "message: " << s.message() << "\nexpected: " << needle;
}

TEST(MoePath, RejectsBadPathAndUnsupportedPerEntry) {
  MoeParams p = params(1, 128, 64, 8, 2);
  p.path = static_cast<MoePath>(7);
  expect_error(fused_moe(p, fake(0x1000000), size_t(1) << 30, nullptr), StatusCode::kInvalidArgument,
               "fused_moe: path (=7) is not a MoePath");
  EXPECT_EQ(moe_workspace_bytes(p), 0u);

  MoeParams k33 = params(1, 128, 64, 64, 33);
  k33.path = MoePath::kPerEntry;
  expect_error(fused_moe(k33, fake(0x1000000), size_t(1) << 30, nullptr), StatusCode::kNotSupported,
               "path kPerEntry needs top_k <= 32");
  k33.path = MoePath::kAuto;  // kAuto falls back to the pipeline instead
  EXPECT_GT(moe_workspace_bytes(k33), 0u);

  MoeParams wide = params(1, 16384 + 64, 64, 8, 2);
  wide.path = MoePath::kPerEntry;
  expect_error(fused_moe(wide, fake(0x1000000), size_t(1) << 30, nullptr), StatusCode::kNotSupported,
               "hidden <= 16384");
}

// kFusedDecode is limited to the fused permutation's sizes (T * top_k <= 4096, E_local <= 512);
// kAuto and kPipeline are not.
TEST(MoePath, FusedDecodeLimits) {
  MoeParams big = params(513, 128, 64, 64, 8);  // 4104 entries
  big.path = MoePath::kFusedDecode;
  expect_error(fused_moe(big, fake(0x1000000), size_t(1) << 30, nullptr), StatusCode::kNotSupported,
               "path kFusedDecode needs num_tokens * top_k <= 4096");
  EXPECT_EQ(moe_workspace_bytes(big), 0u);
  big.path = MoePath::kPipeline;
  EXPECT_GT(moe_workspace_bytes(big), 0u);

  MoeParams many = params(4, 128, 64, 1024, 2);  // 1024 local experts
  many.path = MoePath::kFusedDecode;
  expect_error(fused_moe(many, fake(0x1000000), size_t(1) << 30, nullptr), StatusCode::kNotSupported,
               "num_experts / ep_size <= 512");
  many.ep_size = 2;  // 512 local experts
  EXPECT_GT(moe_workspace_bytes(many), 0u);
  EXPECT_TRUE(moe_impl::fused_decode_supported(512, 8, 512));
  EXPECT_FALSE(moe_impl::fused_decode_supported(513, 8, 512));
  EXPECT_FALSE(moe_impl::fused_decode_supported(1, 8, 513));
  // A product past int64 (formerly computed first, wrapping negative) is refused.
  EXPECT_FALSE(moe_impl::fused_decode_supported(int64_t(1) << 61, 8, 16));
}

// One workspace serves both paths (the per-entry path uses the pipeline layout's act region).
TEST(MoePath, WorkspaceIsTheSameForEveryPath) {
  for (int64_t T : {1, 3, 32}) {
    MoeParams p = params(T, 256, 192, 16, 4);
    p.path = MoePath::kAuto;
    const size_t a = moe_workspace_bytes(p);
    p.path = MoePath::kPipeline;
    const size_t b = moe_workspace_bytes(p);
    p.path = MoePath::kPerEntry;
    const size_t c = moe_workspace_bytes(p);
    EXPECT_GT(a, 0u);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, c);
    // act region: [T * k, max(H, I)] 16-bit >= the per-entry h [T * k, I].
    EXPECT_GE(a, size_t(T * 4 * 192 * 2));
  }
}

TEST(MoePath, AutoRule) {
  // An H100's 132 SMs.
  auto path = [](int64_t T, int64_t k, int64_t H, int64_t I, int64_t E, bool w4a4 = false, int sms = 132) {
    return moe_impl::resolve_moe_path(MoePath::kAuto, T, k, H, I, E, w4a4, sms);
  };
  auto pe = [&](int64_t T, int64_t k, int64_t H, int64_t I, int64_t E, bool w4a4 = false) {
    return path(T, k, H, I, E, w4a4) == MoePath::kPerEntry;
  };
  // Qwen3.6-35B-A3B (H 2048, I 512, E 256, k 8): per-entry up to T = 8 (64 entries, H <= 4096), both modes.
  EXPECT_TRUE(pe(1, 8, 2048, 512, 256));
  EXPECT_TRUE(pe(4, 8, 2048, 512, 256));
  EXPECT_TRUE(pe(5, 8, 2048, 512, 256));
  EXPECT_TRUE(pe(8, 8, 2048, 512, 256));
  EXPECT_FALSE(pe(9, 8, 2048, 512, 256));
  EXPECT_TRUE(pe(2, 8, 2048, 512, 256, true));
  EXPECT_TRUE(pe(8, 8, 2048, 512, 256, true));
  EXPECT_FALSE(pe(9, 8, 2048, 512, 256, true));
  EXPECT_TRUE(pe(1, 8, 2048, 512, 256, true));
  // fi-256 (H 7168, I 256): per-entry up to 64 entries (T = 8; FC2 rows of 4 chunks, session 37).
  EXPECT_TRUE(pe(2, 8, 7168, 256, 256));
  EXPECT_TRUE(pe(4, 8, 7168, 256, 256));
  EXPECT_TRUE(pe(4, 8, 7168, 256, 256, true));
  EXPECT_TRUE(pe(5, 8, 7168, 256, 256));
  EXPECT_TRUE(pe(8, 8, 7168, 256, 256, true));
  EXPECT_FALSE(pe(9, 8, 7168, 256, 256));
  EXPECT_FALSE(pe(5, 8, 7168, 320, 256));  // I = 320: 5 chunks
  EXPECT_FALSE(pe(8, 8, 7168, 256, 255));  // E_local < 4 T k: repeats expected
  // Repeated experts: more than 1.2 expected rows per active expert keeps the per-entry path off
  // beyond 4 entries (E 8, k 8, T = 2: 2 rows per expert; Qwen3-30B T = 8: 1.24).
  EXPECT_NEAR(moe_impl::expected_rows_per_expert(8, 8, 128), 1.240, 1e-3);
  EXPECT_NEAR(moe_impl::expected_rows_per_expert(2, 8, 32), 16.0 / 14.0, 1e-9);
  EXPECT_TRUE(pe(1, 8, 7168, 2048, 8));
  EXPECT_FALSE(pe(2, 8, 7168, 2048, 8));
  EXPECT_TRUE(pe(2, 8, 7168, 2048, 32));  // fi-32 T = 2: 1.14 rows per expert
  EXPECT_FALSE(pe(4, 8, 7168, 2048, 32));  // 1.46
  // 33..64 entries only where experts do not repeat (E_local >= 4 T k) and H <= 4096 or I <= 256: Qwen3-30B (E 128)
  // T = 4 yes, T = 5 / 6 (1.13 / 1.17 rows, but 128 < 160 / 192) no.
  EXPECT_TRUE(pe(4, 8, 2048, 768, 128));
  EXPECT_FALSE(pe(5, 8, 2048, 768, 128));
  EXPECT_FALSE(pe(6, 8, 2048, 768, 128));
  EXPECT_FALSE(pe(5, 8, 2048, 768, 128, true));
  EXPECT_TRUE(pe(5, 8, 2048, 512, 160));    // E_local = 4 T k: no repeats expected
  EXPECT_FALSE(pe(5, 8, 2048, 512, 159));
  EXPECT_TRUE(pe(5, 8, 4096, 512, 256));    // H = 4096: still short rows
  EXPECT_FALSE(pe(5, 8, 4160, 512, 256));
  EXPECT_TRUE(pe(4, 8, 4160, 512, 256));    // up to 32 entries H does not matter
  // T = 0 never reaches the choice (fused_moe returns first); the rule still answers, without dividing by 0.
  EXPECT_EQ(path(0, 8, 2048, 512, 256), MoePath::kPerEntry);
  EXPECT_EQ(moe_impl::expected_rows_per_expert(0, 8, 256), 0.0);
  // Few local experts: T = 1, and up to 4 entries (Mixtral: E 8, k 2, T = 2: experts repeat, kernel
  // A's expert slices); more entries take the pipeline.
  EXPECT_TRUE(pe(1, 2, 4096, 14336, 8));
  EXPECT_TRUE(pe(2, 2, 4096, 14336, 8));
  EXPECT_TRUE(pe(2, 2, 4096, 14336, 8, true));
  EXPECT_FALSE(pe(3, 2, 4096, 14336, 8));
  // Outside the per-entry limits kAuto keeps the pipeline.
  EXPECT_FALSE(pe(1, 33, 2048, 512, 256));
  EXPECT_FALSE(pe(1, 8, 16384 + 64, 512, 256));
  // The fused-decode path: enough FC1 units (experts x I/16, >= 0.7 W before any split) and FC2
  // units (experts x H/32, >= W) for the W = 16 warps per SM, at most 6 rows per expert, T * k <= 4096.
  constexpr MoePath kFused = MoePath::kFusedDecode, kPipe = MoePath::kPipeline;
  EXPECT_EQ(path(16, 8, 2048, 512, 256), kFused);  // Qwen3.6: 101 experts x 32 FC1 units
  EXPECT_EQ(path(16, 8, 2048, 512, 256, true), kFused);
  EXPECT_EQ(path(64, 8, 2048, 512, 256), kFused);
  EXPECT_EQ(path(600, 8, 2048, 512, 256), kPipe);  // 4800 entries: past the fused permutation
  EXPECT_EQ(path(16, 8, 2048, 512, 256, false, 66), kFused);  // half the SMs
  EXPECT_EQ(path(4, 8, 2048, 768, 128), MoePath::kPerEntry);  // Qwen3-30B
  EXPECT_EQ(path(8, 8, 2048, 768, 128), kFused);
  EXPECT_EQ(path(1, 8, 7168, 2048, 256), MoePath::kPerEntry);  // DeepSeek-V3
  EXPECT_EQ(path(4, 8, 7168, 2048, 256), MoePath::kPerEntry);
  EXPECT_EQ(path(8, 8, 7168, 2048, 256), kFused);
  // fi-256 (I = 256: 64-row FC2 units, FC1 units from 0.4 W): 101 experts x 16 FC1 units at T = 16
  // (T = 8 takes the per-entry path since session 37).
  EXPECT_EQ(path(8, 8, 7168, 256, 256), MoePath::kPerEntry);
  EXPECT_EQ(path(16, 8, 7168, 256, 256), kFused);
  EXPECT_EQ(moe_impl::fused_decode_fc2_blocks(256), 2);
  EXPECT_EQ(moe_impl::fused_decode_fc2_blocks(512), 1);
  EXPECT_EQ(path(64, 8, 7168, 256, 256), kFused);
  EXPECT_EQ(path(4, 8, 7168, 2048, 32), kFused);  // fi-32
  EXPECT_EQ(path(32, 8, 7168, 2048, 32), kPipe);  // 8 rows per expert
  EXPECT_EQ(path(4, 2, 4096, 14336, 8), kPipe);   // Mixtral: 8 experts x 128 FC2 units
  EXPECT_EQ(path(16, 2, 4096, 14336, 8), kPipe);
  EXPECT_NEAR(moe_impl::expected_active_experts(2, 8, 256), 15.75, 1e-9);
  // FC1 parts: 4 below W / 2 units, 2 below 1.3 W, parts of >= 8 chunks of K.
  auto parts = [](int64_t T, int64_t k, int64_t H, int64_t I, int64_t E) {
    return moe_impl::fused_decode_fc1_parts(T, k, H, I, E, 132);
  };
  EXPECT_EQ(parts(4, 8, 7168, 256, 256), 4);    // fi-256: 504 units
  EXPECT_EQ(parts(16, 8, 7168, 256, 256), 2);   // 1631
  EXPECT_EQ(parts(64, 8, 7168, 256, 256), 1);   // 3536
  EXPECT_EQ(parts(8, 8, 2048, 768, 128), 2);    // Qwen3-30B: 2478
  EXPECT_EQ(parts(16, 8, 2048, 768, 128), 1);   // 3936
  EXPECT_EQ(parts(4, 8, 7168, 2048, 256), 1);   // DeepSeek-V3: 4032
  EXPECT_EQ(parts(4, 8, 2048, 512, 256), 4);    // Qwen3.6: 977 units, 32 chunks: 4 parts of 8
  EXPECT_EQ(parts(4, 8, 1024, 512, 256), 2);    // 16 chunks: at most 2 parts
  EXPECT_EQ(parts(4, 8, 512, 512, 256), 1);     // 8 chunks: no split
  // The workspace covers the split of every T' <= max_tokens.
  const moe_impl::FusedDecodeWorkspace ws = moe_impl::fused_decode_workspace(16, 8, 2048, 512, 256, 132);
  EXPECT_GT(ws.partial_floats, 0);
  for (int64_t t = 1; t <= 16; ++t) {
    const int p = parts(t, 8, 2048, 512, 256);
    const int64_t slots = std::min<int64_t>(256, t * 8);
    EXPECT_GE(ws.sync_words, moe_impl::fused_decode_sync_words(slots, 2048, 512, p)) << t;
    if (p > 1) EXPECT_GE(ws.partial_floats, slots * 32 * p * 256) << t;
  }
  EXPECT_EQ(moe_impl::fused_decode_workspace(16, 8, 2048, 512, 600, 132).sync_words, 0);  // > 512 experts
  EXPECT_NEAR(moe_impl::expected_active_experts(3, 8, 8), 8.0, 1e-9);
  // Forced paths.
  for (MoePath forced : {MoePath::kPipeline, MoePath::kPerEntry, MoePath::kFusedDecode})
    EXPECT_EQ(moe_impl::resolve_moe_path(forced, 8, 8, 2048, 512, 256, false, 132), forced);
  EXPECT_TRUE(moe_impl::per_entry_supported(8191, 8, 2048));
  EXPECT_FALSE(moe_impl::per_entry_supported(8192, 8, 2048));  // T * k > 65535
}

// W4A4's staging kernel runs where per-CTA staging would be large (src/moe/per_entry.h).
TEST(MoePath, PerEntryPrestageRule) {
  using moe_impl::per_entry_prestages;  // (T, k, I, H)
  EXPECT_TRUE(per_entry_prestages(1, 8, 2048, 7168));   // DeepSeek-V3 T = 1
  EXPECT_TRUE(per_entry_prestages(4, 8, 256, 7168));    // fi-256 T = 4
  EXPECT_TRUE(per_entry_prestages(2, 8, 768, 2048));    // Qwen3-30B T = 2
  EXPECT_FALSE(per_entry_prestages(1, 8, 512, 2048));   // Qwen3.6 T = 1: kernel A stages x itself
  EXPECT_TRUE(per_entry_prestages(1, 8, 512, 2560));    // exactly 640 Ki elements
  EXPECT_FALSE(per_entry_prestages(1, 8, 512, 2496));
}

// W4A4's elementwise round trips take one thread per 16-element block from 1024 blocks per SM on
// (moe_kernels.h; H100 session 33: DeepSeek-V3 T = 4096 SwiGLU 233 -> 148 us), and the override wins.
TEST(MoePath, QuantThreadPerBlockRule) {
  using moe_impl::quant_thread_per_block;  // (NVFP4 blocks, SMs, forced)
  EXPECT_TRUE(quant_thread_per_block(int64_t(4096) * 8 * (2048 / 16), 132, -1));   // DeepSeek-V3 SwiGLU, T = 4096
  EXPECT_TRUE(quant_thread_per_block(int64_t(4096) * (7168 / 16), 132, -1));       // its per-token quantization
  EXPECT_TRUE(quant_thread_per_block(int64_t(4096) * 8 * (512 / 16), 132, -1));    // Qwen3.6 SwiGLU, T = 4096
  EXPECT_FALSE(quant_thread_per_block(int64_t(256) * 8 * (512 / 16), 132, -1));    // Qwen3.6 T = 256
  EXPECT_TRUE(quant_thread_per_block(int64_t(1024) * 132, 132, -1));              // the boundary
  EXPECT_FALSE(quant_thread_per_block(int64_t(1024) * 132 - 1, 132, -1));
  EXPECT_FALSE(quant_thread_per_block(int64_t(1) << 40, 132, 0));
  EXPECT_TRUE(quant_thread_per_block(1, 132, 1));
  EXPECT_FALSE(quant_thread_per_block(int64_t(1024) * 132 - 1, 0, -1));  // no device: 132 SMs assumed
}

// The per-entry kernels' rolling load groups (src/moe/per_entry.h), at the presets they were measured
// on (H200, 132 SMs; docs/PERF.md session 20): kernel A's grid is I/16 x T*k CTAs, kernel B's rows are
// I/64 chunks long.
// Kernel A asks L2 for kernel B's FC2 rows of the last n entries: as many entries as their FC1 and
// FC2 bytes fit in half the L2, with H >= 4096 only (moe_impl::per_entry_fc2_prefetch_entries).
TEST(MoePath, PerEntryFc2PrefetchRule) {
  using moe_impl::per_entry_fc2_prefetch_entries;  // (T*k, H, FC1 bytes, FC2 bytes per expert, L2 bytes, all)
  const int64_t l2 = 50ll << 20;
  auto bytes = [](int64_t rows, int64_t cols) { return rows * cols * 9 / 16; };  // NVFP4 + E4M3 scales
  const int64_t fi256_1 = bytes(512, 7168), fi256_2 = bytes(7168, 256);         // 3.10 MB per expert
  EXPECT_EQ(per_entry_fc2_prefetch_entries(8, 7168, fi256_1, fi256_2, l2), 8);    // fi-256 T = 1: all
  EXPECT_EQ(per_entry_fc2_prefetch_entries(32, 7168, fi256_1, fi256_2, l2), 8);   // T = 4: the last 8
  const int64_t ds_1 = bytes(4096, 7168), ds_2 = bytes(7168, 2048);               // 24.8 MB
  EXPECT_EQ(per_entry_fc2_prefetch_entries(8, 7168, ds_1, ds_2, l2), 1);          // DeepSeek-V3, fi-32
  EXPECT_EQ(per_entry_fc2_prefetch_entries(2, 4096, bytes(28672, 4096), bytes(4096, 14336), l2), 0);  // Mixtral
  EXPECT_EQ(per_entry_fc2_prefetch_entries(8, 2048, bytes(1024, 2048), bytes(2048, 512), l2), 0);     // Qwen3.6
  EXPECT_EQ(per_entry_fc2_prefetch_entries(8, 2048, bytes(1024, 2048), bytes(2048, 512), l2, true), 8);
  EXPECT_EQ(per_entry_fc2_prefetch_entries(8, 7168, fi256_1, fi256_2, 0), 0);     // L2 size unknown
  EXPECT_EQ(per_entry_fc2_prefetch_entries(8, 7168, fi256_1, fi256_2, 100ll << 20), 8);  // a larger L2: still T*k
}

TEST(MoePath, PerEntryRollingRules) {
  using moe_impl::per_entry_fc1_rolls;  // (CTAs = I/16 x T*k, k_chunks = H / 64, SMs)
  using moe_impl::per_entry_fc2_rolls;  // (k_chunks = I / 64, row tiles per CTA)
  EXPECT_TRUE(per_entry_fc1_rolls(256 / 16 * 8, 112, 132));     // fi-256 T = 1: 128 CTAs
  EXPECT_TRUE(per_entry_fc1_rolls(256 / 16 * 16, 112, 132));    // fi-256 T = 2
  EXPECT_TRUE(per_entry_fc1_rolls(512 / 16 * 8, 32, 132));      // Qwen3.6 T = 1: 256
  EXPECT_TRUE(per_entry_fc1_rolls(264, 32, 132));               // one wave of 2 CTAs per SM
  EXPECT_FALSE(per_entry_fc1_rolls(265, 32, 132));
  EXPECT_FALSE(per_entry_fc1_rolls(512 / 16 * 16, 32, 132));    // Qwen3.6 T = 2: 512
  EXPECT_FALSE(per_entry_fc1_rolls(768 / 16 * 8, 32, 132));     // Qwen3-30B T = 1: 384 (+7.7 % rolled)
  EXPECT_FALSE(per_entry_fc1_rolls(768 / 16 * 32, 32, 132));    // Qwen3-30B T = 4: 1536 (+8.5 %)
  EXPECT_FALSE(per_entry_fc1_rolls(2048 / 16 * 8, 112, 132));   // DeepSeek-V3 T = 1: 1024
  // Long rows (>= 8 chunks per warp) roll up to two waves: fi-256 T = 4 (512 CTAs, session 25).
  EXPECT_TRUE(per_entry_fc1_rolls(256 / 16 * 32, 112, 132));
  EXPECT_TRUE(per_entry_fc1_rolls(528, 64, 132));
  EXPECT_FALSE(per_entry_fc1_rolls(528, 63, 132));
  EXPECT_FALSE(per_entry_fc1_rolls(529, 112, 132));
  EXPECT_FALSE(per_entry_fc1_rolls(256 / 16 * 64, 112, 132));   // fi-256 T = 8: 1024
  EXPECT_TRUE(per_entry_fc1_rolls(264, 32, 132) && !per_entry_fc1_rolls(264, 32, 114));  // by the SM count
  EXPECT_TRUE(per_entry_fc2_rolls(256 / 64, 1));     // fi-256
  EXPECT_TRUE(per_entry_fc2_rolls(512 / 64, 1));     // Qwen3.6
  EXPECT_TRUE(per_entry_fc2_rolls(768 / 64, 1));     // Qwen3-30B
  EXPECT_FALSE(per_entry_fc2_rolls(832 / 64, 1));    // 13 chunks
  EXPECT_FALSE(per_entry_fc2_rolls(2048 / 64, 1));   // DeepSeek-V3, fi-32
  EXPECT_FALSE(per_entry_fc2_rolls(14336 / 64, 1));  // Mixtral
  EXPECT_FALSE(per_entry_fc2_rolls(256 / 64, 2));    // two row tiles per CTA: plain groups
  using moe_impl::per_entry_fc2_row_tiles;  // (tiles = H / 16, T, k_chunks = I / 64, SMs[, wide])
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 1, 32, 132), 2);   // DeepSeek-V3 / fi-32 T = 1: 448 CTAs -> 224
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 4, 32, 132), 2);   // DeepSeek-V3 T = 4: long rows keep 2 tiles
  EXPECT_EQ(per_entry_fc2_row_tiles(256, 1, 224, 132), 1);  // Mixtral T = 1: 256 CTAs, one wave already
  EXPECT_EQ(per_entry_fc2_row_tiles(256, 2, 224, 132), 2);
  EXPECT_EQ(per_entry_fc2_row_tiles(128, 2, 8, 132), 1);    // Qwen3.6 T = 2: 256 CTAs (rolling single tiles)
  EXPECT_EQ(per_entry_fc2_row_tiles(128, 4, 8, 132), 2);    // Qwen3.6 T = 4: 512 -> 256 (session 25: -11..-15 %)
  EXPECT_EQ(per_entry_fc2_row_tiles(128, 4, 12, 132), 2);   // Qwen3-30B T = 4
  EXPECT_EQ(per_entry_fc2_row_tiles(133, 2, 12, 132), 1);   // an odd tile count keeps one tile per CTA
  // Rows of at most 4 chunks (fi-256: 448 tiles): the fewest tiles per CTA whose grid fits 264 slots.
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 1, 4, 132), 2);   // T = 1: 224 CTAs
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 2, 4, 132), 4);   // T = 2: 224
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 3, 4, 132), 8);   // T = 3: 168 (336 with 4)
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 4, 4, 132), 8);   // T = 4: 224
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 8, 4, 132), 8);   // T = 8: 448, none fits: the most
  EXPECT_EQ(per_entry_fc2_row_tiles(128, 2, 4, 132), 1);   // H = 2048, T = 2: 256 CTAs of one tile
  EXPECT_EQ(per_entry_fc2_row_tiles(68, 16, 4, 132), 4);   // 68 tiles: 4 at most
  EXPECT_EQ(per_entry_fc2_row_tiles(133, 4, 4, 132), 1);   // odd
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 4, 5, 132), 2);   // 5 chunks (I = 320): the two-tile rule
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 0, 4, 132), 1);   // no tokens: the fewest
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 4, 4, 132, 0), 2);  // off: the two-tile rule
  EXPECT_EQ(per_entry_fc2_row_tiles(448, 1, 4, 132, 0), 2);
  EXPECT_EQ(per_entry_fc2_row_tiles(128, 1, 32, 132, 1), 8);  // forced: the most that divide, any grid
  EXPECT_EQ(per_entry_fc2_row_tiles(68, 1, 32, 132, 1), 4);
  EXPECT_EQ(per_entry_fc2_row_tiles(130, 1, 4, 132, 1), 2);
  EXPECT_EQ(per_entry_fc2_row_tiles(133, 1, 4, 132, 1), 1);
}

TEST(MoePath, PerEntryExpertSlices) {
  using moe_impl::per_entry_fc1_group;  // (T, k, H, E_local): tokens per kernel-A CTA
  EXPECT_EQ(per_entry_fc1_group(1, 2, 4096, 8), 1);     // T = 1: one entry per CTA
  EXPECT_EQ(per_entry_fc1_group(2, 2, 4096, 8), 2);     // Mixtral T = 2: experts repeat
  EXPECT_EQ(per_entry_fc1_group(8, 2, 4096, 8), 4);     // 4 rows of 8 KB fill the 32 KB
  EXPECT_EQ(per_entry_fc1_group(3, 8, 7168, 32), 2);    // fi-32: two rows of 14 KB
  EXPECT_EQ(per_entry_fc1_group(16, 2, 2048, 8), 8);    // at most the MMA's 8 columns
  EXPECT_EQ(per_entry_fc1_group(4, 2, 16384, 8), 1);    // one 32 KB row
  EXPECT_EQ(per_entry_fc1_group(2, 8, 2048, 256), 1);   // Qwen3.6 T = 2: no repeats expected
  EXPECT_EQ(per_entry_fc1_group(4, 8, 2048, 128), 1);   // Qwen3-30B T = 4: 32 entries, 128 experts
  EXPECT_EQ(per_entry_fc1_group(4, 8, 2048, 127), 4);   // one expert fewer: repeats expected
  EXPECT_EQ(per_entry_fc1_group(0, 2, 4096, 8), 1);
  EXPECT_EQ(per_entry_fc1_group(128, 2, 2048, 8), 8);   // 256 entries: still scanned
  EXPECT_EQ(per_entry_fc1_group(129, 2, 2048, 8), 1);   // beyond kPerEntryMaxSliceScan
}

}  // namespace

// FC1 reading its rows in place (moe_path.h): fi-256 (2I = 512) at every rows-per-expert the 256x128
// tile takes, Qwen3.6 (2I = 1024) up to 64 rows, never Qwen3-30B (1536) or DeepSeek-V3 (4096).
TEST(MoePath, Fc1RowGatherRule) {
  for (int64_t rows : {33, 48, 64, 96, 112, 137, 240}) {
    EXPECT_TRUE(moe_impl::fc1_row_gather_pays(512, rows)) << rows;
    EXPECT_EQ(moe_impl::fc1_row_gather_pays(1024, rows), rows <= 64) << rows;
    EXPECT_FALSE(moe_impl::fc1_row_gather_pays(1536, rows)) << rows;
    EXPECT_FALSE(moe_impl::fc1_row_gather_pays(4096, rows)) << rows;
  }
  EXPECT_TRUE(moe_impl::fc1_row_gather_pays(256, 200));  // one n tile
}
