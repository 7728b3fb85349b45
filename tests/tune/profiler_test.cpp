// The GEMM profiler and tune_gemm(): CPU checks always, measurements on an sm_90 GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/gpu_test.h"
#include "fp4kit/device.h"
#include "fp4kit/gemm.h"
#include "fp4kit/tune.h"
#include "tune/winner.h"  // kTuneTieMargin

namespace fp4kit {
namespace {

GemmParams shape(int64_t m, int64_t n, int64_t k, DType a = DType::kBF16, DType d = DType::kBF16) {
  GemmParams p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_dtype = a;
  p.d_dtype = d;
  return p;
}

TEST(TuneProfiler, WithoutGpuIsAnErrorNotACrash) {
  if (device_info().available) GTEST_SKIP() << "a GPU is present";
  std::vector<TacticTiming> t;
  EXPECT_EQ(profile_gemm(shape(16, 4096, 4096), {}, {}, &t).code(), StatusCode::kNoDevice);
  std::vector<TuneResult> r;
  EXPECT_EQ(tune_gemm({{4096, 4096}}, {1, 16}, {}, nullptr, &r).code(), StatusCode::kNoDevice);
  EXPECT_TRUE(r.empty());
}

TEST(TuneProfiler, RejectsBadShapes) {
  std::vector<TacticTiming> t;
  const Status s = profile_gemm(shape(16, 4096, 100), {}, {}, &t);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  // Shapes past the GEMM's 2^31 limits are refused before the heuristic picks a tactic for them (its
  // arithmetic assumes the limits) and before a GPU is looked for.
  EXPECT_EQ(profile_gemm(shape(16, int64_t(1) << 40, 4096), {}, {}, &t).code(), StatusCode::kInvalidArgument);
  std::vector<TuneResult> r;
  const Status big = tune_gemm({{4096, int64_t(1) << 40}}, {1}, {}, nullptr, &r);
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument) << big.message();
  EXPECT_NE(big.message().find("[1, 2^31)"), std::string::npos) << big.message();
  EXPECT_EQ(tune_gemm({{4096, 4096}}, {0}, {}, nullptr, &r).code(), StatusCode::kInvalidArgument);
}

TEST(TuneProfilerGpu, TimesEveryTacticAndSkipsTheOnesThatCannotRun) {
  FP4KIT_REQUIRE_SM90A();
  ProfileOptions opt;
  opt.repeats = 5;
  std::vector<TacticTiming> t;
  ASSERT_TRUE(profile_gemm(shape(16, 4096, 4096), {}, opt, &t).is_ok());
  ASSERT_EQ(t.size(), gemm_tactics().size());
  int ran = 0;
  for (const TacticTiming& x : t) {
    if (x.status.is_ok()) {
      EXPECT_GT(x.us, 0.0) << x.name;
      EXPECT_LT(x.us, 10000.0) << x.name;
      ++ran;
    } else {
      EXPECT_LT(x.us, 0.0) << x.name;
    }
  }
  EXPECT_GT(ran, 1);
  // A tactic that cannot run the problem is skipped, not fatal: here an unknown id and, for
  // M = 300, every decode tactic (the decode family serves M <= 256).
  std::vector<int> ids;
  for (const GemmTacticInfo& x : gemm_tactics()) ids.push_back(x.id);
  ids.push_back(9999);
  ASSERT_TRUE(profile_gemm(shape(300, 4096, 4096, DType::kE2M1x2, DType::kBF16), ids, opt, &t).is_ok());
  int skipped = 0, ran_w4a4 = 0;
  for (const TacticTiming& x : t) (x.status.is_ok() ? ran_w4a4 : skipped) += 1;
  EXPECT_GT(skipped, 1);
  EXPECT_GT(ran_w4a4, 0);
  EXPECT_FALSE(t.back().status.is_ok());
}

TEST(TuneProfilerGpu, TuneWritesTheCacheAndTheWinnerIsTheFastest) {
  FP4KIT_REQUIRE_SM90A();
  const std::string path = "/tmp/fp4kit_tune_gpu_test_" + std::to_string(getpid()) + ".json";
  std::filesystem::remove(path);
  TuneOptions opt;
  opt.profile.repeats = 5;
  std::vector<TuneResult> results;
  int calls = 0;
  {
    TuneCache cache(path, current_tune_device());
    ASSERT_TRUE(tune_gemm({{4096, 4096}}, {1, 3, 100, 1000}, opt, &cache, &results,
                          [&](const TuneResult&, int index, int total) {
                            EXPECT_EQ(index, calls++);
                            EXPECT_EQ(total, 4);
                          })
                    .is_ok());
  }
  ASSERT_EQ(results.size(), 4u);  // buckets 1, 4, 128, 1024
  EXPECT_EQ(results[1].key.m_bucket, 4);
  TuneCache reread(path, current_tune_device());
  for (const TuneResult& r : results) {
    ASSERT_GE(r.best_tactic, 0);
    // The fastest, or the heuristic's tactic when that is within the tie margin of the fastest
    // (winner.cpp): a near-tie keeps the untuned choice.
    for (const TacticTiming& t : r.timings)
      if (t.us >= 0) EXPECT_LE(r.best_us, t.us * (1.0 + tune_impl::kTuneTieMargin)) << t.name;
    EXPECT_EQ(reread.lookup(r.key), r.best_tactic);
  }
  EXPECT_EQ(reread.warnings(), 0);
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".lock");
}

}  // namespace
}  // namespace fp4kit
