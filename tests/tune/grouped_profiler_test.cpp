// The grouped GEMM (fused MoE) profiler and tune_moe(): argument checks on any machine,
// measurements on an sm_90 GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "common/gpu_test.h"
#include "fp4kit/device.h"
#include "fp4kit/tune.h"
#include "gemm/grouped.h"

namespace fp4kit {
namespace {

// Qwen3.6-35B-A3B's FC2: 256 experts of [2048, 512], top 8 (small: quick to profile).
constexpr GroupedGemmShape kSmall{2048, 512, 256, 256, 8};

TEST(GroupedTuneProfiler, RejectsBadArgumentsOnAnyMachine) {
  std::vector<TacticTiming> t;
  EXPECT_EQ(profile_grouped_gemm({2048, 500, 256, 256, 8}, DType::kBF16, 16, {}, {}, &t).code(),
            StatusCode::kInvalidArgument);  // k % 16
  EXPECT_EQ(profile_grouped_gemm({2048, 512, 256, 128, 8}, DType::kBF16, 16, {}, {}, &t).code(),
            StatusCode::kInvalidArgument);  // groups > experts
  EXPECT_EQ(profile_grouped_gemm(kSmall, DType::kE2M1x2, 16, {}, {}, &t).code(), StatusCode::kInvalidArgument);
  std::vector<TuneResult> r;
  EXPECT_EQ(tune_moe({{"bad", 2048, 500, 256, 8, 1}}, {1}, {}, nullptr, &r).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tune_moe({{"bad-ep", 2048, 512, 256, 8, 3}}, {1}, {}, nullptr, &r).code(), StatusCode::kInvalidArgument);
  // Past fused_moe's limits (H, 2 I < 2^31), and token counts outside [1, 2^31).
  EXPECT_EQ(tune_moe({{"huge-i", 2048, int64_t(1) << 30, 256, 8, 1}}, {1}, {}, nullptr, &r).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(tune_moe({{"ok", 2048, 512, 256, 8, 1}}, {0}, {}, nullptr, &r).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(r.empty());
}

TEST(GroupedTuneProfiler, WithoutGpuIsAnErrorNotACrash) {
  if (device_info().available) GTEST_SKIP() << "a GPU is present";
  std::vector<TacticTiming> t;
  EXPECT_EQ(profile_grouped_gemm(kSmall, DType::kBF16, 16, {}, {}, &t).code(), StatusCode::kNoDevice);
  std::vector<TuneResult> r;
  EXPECT_EQ(tune_moe({{"qwen3.6-35b-a3b", 2048, 512, 256, 8, 1}}, {1, 16}, {}, nullptr, &r).code(),
            StatusCode::kNoDevice);
  EXPECT_TRUE(r.empty());
}

TEST(GroupedTuneProfilerGpu, TimesEveryTacticAndSkipsTheOnesThatCannotRun) {
  FP4KIT_REQUIRE_SM90A();
  ProfileOptions opt;
  opt.repeats = 5;
  std::vector<TacticTiming> t;
  ASSERT_TRUE(profile_grouped_gemm(kSmall, DType::kBF16, 16, {}, opt, &t).is_ok());
  ASSERT_EQ(int(t.size()), gemm_impl::grouped_gemm_tactic_count());
  int ran = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].tactic, int(i));  // in the order asked for
    EXPECT_EQ(t[i].name, gemm_impl::grouped_gemm_tactic(int(i))->name);
    if (t[i].status.is_ok()) {
      EXPECT_GT(t[i].us, 0.0) << t[i].name;
      EXPECT_LT(t[i].us, 100000.0) << t[i].name;
      ++ran;
    } else {
      EXPECT_LT(t[i].us, 0.0) << t[i].name;
    }
  }
  EXPECT_GE(ran, gemm_impl::grouped_gemm_tactic_count() - 1);
  // Unknown ids are skipped, not fatal; EP (32 local experts of 256) and fp16 run.
  ASSERT_TRUE(profile_grouped_gemm({2048, 512, 32, 256, 8}, DType::kFP16, 64, {4, 9, 999}, opt, &t).is_ok());
  ASSERT_EQ(t.size(), 3u);
  EXPECT_TRUE(t[0].status.is_ok()) << t[0].status.to_string();
  EXPECT_TRUE(t[1].status.is_ok()) << t[1].status.to_string();
  EXPECT_FALSE(t[2].status.is_ok());
  EXPECT_LT(t[2].us, 0.0);
}

TEST(GroupedTuneProfilerGpu, TuneMoeWritesFc1AndFc2Entries) {
  FP4KIT_REQUIRE_SM90A();
  const std::string path = "/tmp/fp4kit_tune_moe_gpu_test_" + std::to_string(getpid()) + ".json";
  std::filesystem::remove(path);
  TuneOptions opt;
  opt.profile.repeats = 5;
  const MoeTuneLayer layer{"qwen3.6-35b-a3b", 2048, 512, 256, 8, 1};
  std::vector<TuneResult> results;
  int calls = 0;
  {
    TuneCache cache(path, current_tune_device());
    ASSERT_TRUE(tune_moe({layer}, {1, 3, 100}, opt, &cache, &results,
                         [&](const TuneResult&, int index, int total) {
                           EXPECT_EQ(index, calls++);
                           EXPECT_EQ(total, 6);
                         })
                    .is_ok());
  }
  ASSERT_EQ(results.size(), 6u);  // FC1 then FC2, T buckets 1, 4, 128 each
  EXPECT_EQ(results[0].label, "qwen3.6-35b-a3b fc1");
  EXPECT_EQ(results[3].label, "qwen3.6-35b-a3b fc2");
  EXPECT_EQ(results[1].key.m_bucket, 4);
  EXPECT_EQ(results[0].key, grouped_gemm_tune_key(moe_fc1_shape(layer), DType::kBF16, DType::kBF16, 1));
  EXPECT_EQ(results[5].key, grouped_gemm_tune_key(moe_fc2_shape(layer), DType::kBF16, DType::kBF16, 128));
  TuneCache reread(path, current_tune_device());
  std::set<std::string> seen;
  for (const TuneResult& r : results) {
    ASSERT_GE(r.best_tactic, 0) << r.label;
    EXPECT_GE(r.heuristic_tactic, 0);
    for (const TacticTiming& t : r.timings)
      if (t.us >= 0) EXPECT_LE(r.best_us, t.us * 1.016) << r.label << " " << t.name;  // tie margin 1.5 %
    if (r.best_tactic != r.heuristic_tactic) EXPECT_LT(r.best_us * 1.015, r.heuristic_us);
    EXPECT_EQ(reread.lookup(r.key), r.best_tactic);
    seen.insert(r.label + std::to_string(r.key.m_bucket));
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(reread.warnings(), 0);
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".lock");
}

}  // namespace
}  // namespace fp4kit
