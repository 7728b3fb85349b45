// CPU checks of the B-fragment activation order (gemm/fragment_activations.h): every activation
// of a ragged A lands in exactly one word half, and each lane's words are exactly the B operands
// that pair with its prepacked weight fragments (prepacked_layout.h), so the dp decode kernels'
// MMAs multiply matching k.
#include <gtest/gtest.h>

#include <vector>

#include "gemm/fragment_activations.h"
#include "gemm/prepacked_layout.h"

using namespace fp4kit::gemm_impl;

namespace {

TEST(FragmentActivations, EveryElementOnceAndPaddingOutside) {
  for (const auto& [m, k] : std::vector<std::pair<int64_t, int64_t>>{{1, 16}, {9, 80}, {16, 64}, {23, 1040}, {32, 4112}}) {
    const FragmentActivationShape s = fragment_activation_shape(m, k);
    EXPECT_EQ(s.token_tiles, (m + 7) / 8);
    EXPECT_EQ(s.k_chunks, (k + 63) / 64);
    EXPECT_EQ(s.bytes() % 256, 0);
    EXPECT_GE(s.bytes(), s.words() * 4);
    std::vector<int> seen(size_t(m * k), 0);
    std::vector<int> word_used(size_t(s.words()), 0);
    int64_t padding = 0;
    for (int64_t t = 0; t < s.token_tiles; ++t)
      for (int64_t j = 0; j < s.k_chunks; ++j)
        for (int lane = 0; lane < 32; ++lane)
          for (int w = 0; w < kFragmentWordsPerLane; ++w) {
            const int64_t idx = fragment_activation_word(s, t, j, lane, w);
            ASSERT_GE(idx, 0);
            ASSERT_LT(idx, s.words());
            ++word_used[size_t(idx)];
            const int64_t tok = fragment_activation_token(t, lane), kk = fragment_activation_k(j, lane, w);
            EXPECT_EQ(kk % 2, 0);
            if (tok < m && kk < k) {
              ++seen[size_t(tok * k + kk)];
              ++seen[size_t(tok * k + kk + 1)];
            } else {
              ++padding;
            }
          }
    for (int v : seen) ASSERT_EQ(v, 1) << "m " << m << " k " << k;
    for (int v : word_used) ASSERT_EQ(v, 1);
    EXPECT_EQ(padding * 2, s.words() * 2 - m * k);
  }
}

// Word (s, h) of lane (g, c) is the B register of k16 step s: b0 (h = 0) / b1 (h = 1) of
// mma.m16n8k16, i.e. the k of weight fragment elements 4h and 4h + 1 of the same lane and step.
TEST(FragmentActivations, WordsPairWithTheWeightFragments) {
  for (int lane = 0; lane < 32; ++lane)
    for (int s = 0; s < 4; ++s)
      for (int h = 0; h < 2; ++h) {
        const int64_t kk = fragment_activation_k(0, lane, 2 * s + h);
        EXPECT_EQ(kk, fragment_k(lane, s, 4 * h));
        EXPECT_EQ(kk + 1, fragment_k(lane, s, 4 * h + 1));
        // Rows g + 8 use the same k (elements 2, 3, 6, 7).
        EXPECT_EQ(kk, fragment_k(lane, s, 4 * h + 2));
        EXPECT_EQ(fragment_activation_k(3, lane, 2 * s + h), kk + 3 * 64);
      }
}

}  // namespace
