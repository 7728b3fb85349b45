// fused_moe's grouped GEMM tactic choice and the workspace it reserves for tuned tactics (CPU only:
// fake device pointers, never launched): forced > tuned (if valid, runnable and within the
// workspace) > heuristic.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "fp4kit/device.h"
#include "fp4kit/moe.h"
#include "fp4kit/tune.h"
#include "gemm/grouped.h"
#include "moe/moe_tactics.h"
#include "moe/moe_workspace.h"

namespace {

using namespace fp4kit;
namespace fs = std::filesystem;

template <typename T = void>
T* fake(uintptr_t addr) {
  return reinterpret_cast<T*>(addr);
}

// Qwen3.6-35B-A3B-like: H = 2048, I = 512, 256 experts, top 8.
MoeParams qwen(MoeMode mode = MoeMode::kW4A16) {
  MoeParams p;
  p.num_tokens = 16;
  p.hidden = 2048;
  p.inter = 512;
  p.num_experts = 256;
  p.top_k = 8;
  p.mode = mode;
  return p;
}

// The call fused_moe makes (pointers set) for g at T tokens.
gemm_impl::GroupedGemmParams call_for(const moe_impl::MoeGemm& g, int64_t tokens) {
  gemm_impl::GroupedGemmParams q = moe_impl::grouped_params(g, tokens);
  q.a = fake(0x100000);
  q.offsets = fake<const int32_t>(0x200000);
  q.active = fake<const int32_t>(0x300000);
  q.num_active = fake<const int32_t>(0x400000);
  q.b_prepacked = fake(0x10000000);
  q.alpha = fake<const float>(0x500000);
  q.d = fake(0x20000000);
  return q;
}

class MoeTacticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/tmp/fp4kit_moe_tactics_test_" + std::to_string(getpid()) + ".json";
    cache_ = std::make_unique<TuneCache>(path_, TuneDevice{"test GPU", 132, 90, version()},
                                         TuneCache::TacticValidator{}, [](const std::string&) {});
  }
  void TearDown() override {
    cache_.reset();
    fs::remove(path_);
    fs::remove(path_ + ".lock");
  }
  void tune(const moe_impl::MoeGemm& g, int64_t tokens, int tactic) {
    TuneEntry e;
    e.key = grouped_gemm_tune_key(g.shape, g.key_a_dtype, g.act_dtype, tokens);
    e.tactic = tactic;
    e.tactic_name = "in memory, not validated";
    cache_->insert(e);
  }
  std::string path_;
  std::unique_ptr<TuneCache> cache_;
};

TEST_F(MoeTacticsTest, GemmsOfAMoeLayer) {
  MoeParams p = qwen(MoeMode::kW4A4);
  p.ep_size = 4;
  p.fc1_tactic = 3;
  const moe_impl::MoeGemm fc1 = moe_impl::moe_fc1_gemm(p), fc2 = moe_impl::moe_fc2_gemm(p);
  EXPECT_EQ(fc1.shape, (GroupedGemmShape{1024, 2048, 64, 256, 8}));
  EXPECT_EQ(fc2.shape, (GroupedGemmShape{2048, 512, 64, 256, 8}));
  EXPECT_EQ(fc1.key_a_dtype, DType::kE2M1x2);
  EXPECT_EQ(fc1.act_dtype, DType::kBF16);
  EXPECT_EQ(fc1.tactic, 3);
  EXPECT_EQ(fc2.tactic, -1);
  // The arguments fused_moe passes: max_rows = T * top_k, max_group_rows = T.
  const gemm_impl::GroupedGemmParams q = moe_impl::grouped_params(fc2, 16);
  EXPECT_EQ(q.groups, 64);
  EXPECT_EQ(q.max_rows, 128);
  EXPECT_EQ(q.max_group_rows, 16);
  EXPECT_EQ(q.n, 2048);
  EXPECT_EQ(q.k, 512);
}

TEST_F(MoeTacticsTest, TunedTacticIsUsedWhenValid) {
  const moe_impl::MoeGemm fc1 = moe_impl::moe_fc1_gemm(qwen());
  const gemm_impl::GroupedGemmParams call = call_for(fc1, 16);
  // No cache or no entry: the heuristic (-1).
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 16, nullptr, call, size_t(1) << 40), -1);
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 16, cache_.get(), call, size_t(1) << 40), -1);
  tune(fc1, 16, 5);
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 16, cache_.get(), call, size_t(1) << 40), 5);
  // Every T of the bucket (9..16) uses it; other buckets do not.
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 9, cache_.get(), call_for(fc1, 9), size_t(1) << 40), 5);
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 8, cache_.get(), call_for(fc1, 8), size_t(1) << 40), -1);
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 17, cache_.get(), call_for(fc1, 17), size_t(1) << 40), -1);
  // The other GEMM, mode and dtype have their own keys.
  const moe_impl::MoeGemm fc2 = moe_impl::moe_fc2_gemm(qwen());
  EXPECT_EQ(moe_impl::choose_tactic(fc2, 16, cache_.get(), call_for(fc2, 16), size_t(1) << 40), -1);
  const moe_impl::MoeGemm w4a4 = moe_impl::moe_fc1_gemm(qwen(MoeMode::kW4A4));
  EXPECT_EQ(moe_impl::choose_tactic(w4a4, 16, cache_.get(), call_for(w4a4, 16), size_t(1) << 40), -1);
}

TEST_F(MoeTacticsTest, ForcedTacticWins) {
  MoeParams p = qwen();
  p.fc1_tactic = 2;
  const moe_impl::MoeGemm fc1 = moe_impl::moe_fc1_gemm(p);
  tune(fc1, 16, 5);
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 16, cache_.get(), call_for(fc1, 16), size_t(1) << 40), 2);
}

TEST_F(MoeTacticsTest, UnusableTunedTacticFallsBackToTheHeuristic) {
  const moe_impl::MoeGemm fc1 = moe_impl::moe_fc1_gemm(qwen());
  const gemm_impl::GroupedGemmParams call = call_for(fc1, 16);
  // An id outside the grouped tactic table (e.g. a cache edited by hand, or from an in-memory insert).
  tune(fc1, 16, gemm_impl::grouped_gemm_tactic_count());
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 16, cache_.get(), call, size_t(1) << 40), -1);
  tune(fc1, 16, 1 << 20);
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 16, cache_.get(), call, size_t(1) << 40), -1);
  // A stream-K decode tactic needs a workspace: not used when the reserved one is too small.
  tune(fc1, 16, 0);
  ASSERT_GT(gemm_impl::grouped_gemm_workspace_bytes([&] {
              auto q = call;
              q.tactic = 0;
              return q;
            }()),
            0u);
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 16, cache_.get(), call, 0), -1);
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 16, cache_.get(), call, size_t(1) << 40), 0);
  // A tactic that cannot implement the call: the wgmma kernels take at most 1024 groups.
  MoeParams many = qwen();
  many.num_experts = 2048;
  const moe_impl::MoeGemm big = moe_impl::moe_fc1_gemm(many);
  tune(big, 16, 5);
  ASSERT_FALSE(gemm_impl::grouped_gemm_can_implement([&] {
                 auto q = call_for(big, 16);
                 q.tactic = 5;
                 return q;
               }())
                   .is_ok());
  EXPECT_EQ(moe_impl::choose_tactic(big, 16, cache_.get(), call_for(big, 16), size_t(1) << 40), -1);
}

TEST_F(MoeTacticsTest, StaleEntryOnDiskIsNotUsed) {
  const moe_impl::MoeGemm fc1 = moe_impl::moe_fc1_gemm(qwen());
  {
    TuneEntry e;
    e.key = grouped_gemm_tune_key(fc1.shape, fc1.key_a_dtype, fc1.act_dtype, 16);
    e.tactic = 4;
    e.tactic_name = "grouped_wgmma_old_name";  // id 4 is another tactic in this build
    cache_->insert(e);
    ASSERT_TRUE(cache_->save().is_ok());
  }
  TuneCache reread(path_, TuneDevice{"test GPU", 132, 90, version()}, {}, [](const std::string&) {});
  EXPECT_EQ(moe_impl::choose_tactic(fc1, 16, &reread, call_for(fc1, 16), size_t(1) << 40), -1);
  EXPECT_EQ(reread.warnings(), 1);
}

// The workspace fused_moe reserves covers the tuned tactic at every T <= max_tokens, and follows the
// cache when entries are added.
TEST_F(MoeTacticsTest, WorkspaceBoundCoversTunedTactics) {
  const moe_impl::MoeGemm fc2 = moe_impl::moe_fc2_gemm(qwen());
  const int64_t max_tokens = 300;
  const size_t untuned = moe_impl::grouped_workspace_bound(fc2, max_tokens, nullptr);
  EXPECT_EQ(moe_impl::grouped_workspace_bound(fc2, max_tokens, cache_.get()), untuned);  // empty cache
  // Stream-K 8-token tiles at T in (128, 256]: more workspace than the heuristic ever needs here.
  tune(fc2, 256, 0);
  const size_t tuned = moe_impl::grouped_workspace_bound(fc2, max_tokens, cache_.get());
  EXPECT_GE(tuned, untuned);
  ASSERT_GT(tuned, 0u);
  for (int64_t t = 129; t <= 256; ++t) {
    gemm_impl::GroupedGemmParams q = call_for(fc2, t);
    q.tactic = 0;
    ASSERT_LE(gemm_impl::grouped_gemm_workspace_bytes(q), tuned) << t;
    EXPECT_EQ(moe_impl::choose_tactic(fc2, t, cache_.get(), q, tuned), 0) << t;
  }
  // The last, partial bucket (T in (256, 300] -> bucket 512) is covered up to max_tokens.
  tune(fc2, 512, 1);
  const size_t tuned2 = moe_impl::grouped_workspace_bound(fc2, max_tokens, cache_.get());
  gemm_impl::GroupedGemmParams q = call_for(fc2, max_tokens);
  q.tactic = 1;
  EXPECT_LE(gemm_impl::grouped_gemm_workspace_bytes(q), tuned2);
  EXPECT_EQ(moe_impl::choose_tactic(fc2, max_tokens, cache_.get(), call_for(fc2, max_tokens), tuned2), 1);
  // A forced tactic's bound ignores the cache.
  moe_impl::MoeGemm forced = fc2;
  forced.tactic = 6;
  EXPECT_EQ(moe_impl::grouped_workspace_bound(forced, max_tokens, cache_.get()),
            moe_impl::grouped_workspace_bound(forced, max_tokens, nullptr));
}

TEST(MoeTactics, ProcessCacheWithoutGpuIsOff) {
  if (device_info().available) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(default_tune_cache(), nullptr);  // fused_moe then uses the heuristic
}

}  // namespace
