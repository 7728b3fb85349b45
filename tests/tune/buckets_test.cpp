// M buckets (spec §4.4: FlashInfer's hybrid buckets, round-up mapping).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "fp4kit/tune.h"

namespace fp4kit {
namespace {

TEST(TuneBuckets, ListUpTo16384) {
  const std::vector<int64_t> want = {1,    2,    4,    8,    16,   24,   32,   64,   128,  256,  512,  768,
                                     1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 8192, 16384};
  EXPECT_EQ(tune_m_buckets(16384), want);
}

TEST(TuneBuckets, ListAddsMaxItself) {
  EXPECT_EQ(tune_m_buckets(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(tune_m_buckets(3), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(tune_m_buckets(300), (std::vector<int64_t>{1, 2, 4, 8, 16, 24, 32, 64, 128, 256, 300}));
  // 24 is listed only when max_m reaches it; max_m in 17..23 is listed itself.
  EXPECT_EQ(tune_m_buckets(20), (std::vector<int64_t>{1, 2, 4, 8, 16, 20}));
  EXPECT_EQ(tune_m_buckets(24), (std::vector<int64_t>{1, 2, 4, 8, 16, 24}));
  EXPECT_EQ(tune_m_buckets(30), (std::vector<int64_t>{1, 2, 4, 8, 16, 24, 30}));
  const auto b = tune_m_buckets(10000);
  EXPECT_EQ(b.back(), 10000);
  EXPECT_EQ(b[b.size() - 2], 8192);
  EXPECT_TRUE(tune_m_buckets(0).empty());
  EXPECT_TRUE(tune_m_buckets(-5).empty());
}

TEST(TuneBuckets, RuntimeMapping) {
  struct Case {
    int64_t m, bucket;
  };
  const Case cases[] = {{-3, 1},      {0, 1},       {1, 1},       {2, 2},       {3, 4},       {5, 8},
                        {16, 16},     {17, 24},     {24, 24},     {25, 32},     {32, 32},     {255, 256},   {256, 256},   {257, 512},   {511, 512},
                        {512, 512},   {513, 768},   {768, 768},   {769, 1024},  {2047, 2048}, {2048, 2048},
                        {2049, 2560}, {2560, 2560}, {2561, 3072}, {4095, 4096}, {4096, 4096}, {4097, 8192},
                        {8192, 8192}, {8193, 16384}, {100000, 131072}};
  for (const Case& c : cases) EXPECT_EQ(tune_m_bucket(c.m), c.bucket) << "m=" << c.m;
}

TEST(TuneBuckets, MappingLandsOnABucketAndRoundsUp) {
  const auto buckets = tune_m_buckets(1 << 16);
  for (int64_t m = 1; m <= (1 << 16); m += (m < 5000 ? 1 : 97)) {
    const int64_t b = tune_m_bucket(m);
    ASSERT_GE(b, m);
    ASSERT_TRUE(std::find(buckets.begin(), buckets.end(), b) != buckets.end()) << "m=" << m << " -> " << b;
    // The smallest bucket >= m.
    const auto it = std::lower_bound(buckets.begin(), buckets.end(), m);
    ASSERT_EQ(*it, b) << "m=" << m;
  }
}

}  // namespace
}  // namespace fp4kit
