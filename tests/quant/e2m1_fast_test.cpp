// CPU proof that the fast E2M1 encoder of the GPU kernels (src/quant/e2m1_fast.h) is the reference
// encoder (format::float_to_e2m1): the magnitude code for every non-negative non-NaN float32,
// exhaustively (2^31 patterns). (The same functions
// are checked on the GPU, with the hardware's fp32 add, by conversion_gpu_test.cu.)
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "format/e2m1.h"
#include "format/fp32_ops.h"
#include "quant/e2m1_fast.h"

namespace fp4kit {
namespace {

// Calls body(begin, end) on chunks of [0, n) from several threads; returns the sum of the results.
template <class Body>
uint64_t parallel_sum(uint64_t n, Body body) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<uint64_t> next{0}, total{0};
  const uint64_t chunk = uint64_t(1) << 22;
  auto worker = [&] {
    for (;;) {
      const uint64_t b = next.fetch_add(chunk);
      if (b >= n) return;
      total += body(b, std::min(n, b + chunk));
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return total;
}

TEST(E2m1Fast, MagnitudeCodeEqualsReferenceForEveryNonNegativeFloat) {
  // All 2^31 bit patterns with the sign bit clear: +0 ... +Inf, then NaNs (skipped).
  const uint64_t bad = parallel_sum(uint64_t(1) << 31, [](uint64_t b, uint64_t e) {
    uint64_t n = 0;
    for (uint64_t u = b; u < e; ++u) {
      if (u > 0x7f800000u) break;  // NaN payloads: the fast path never sees them
      const float a = format::bits_float(uint32_t(u));
      n += quant::e2m1_magnitude_code_fast(a) != format::e2m1_magnitude_code(a);
    }
    return n;
  });
  EXPECT_EQ(bad, 0u);
}

// The sign is one bit operation on top of the magnitude proven above: every 61st bit pattern (both
// signs, all exponents) keeps this quick.
TEST(E2m1Fast, SignedEncodeEqualsReference) {
  const uint64_t bad = parallel_sum(uint64_t(1) << 32, [](uint64_t b, uint64_t e) {
    uint64_t n = 0;
    for (uint64_t u = (b + 60) / 61 * 61; u < e; u += 61) {
      const float y = format::bits_float(uint32_t(u));
      if (format::is_nan(y)) continue;
      n += quant::e2m1_encode_fast(y) != format::float_to_e2m1(y);
    }
    return n;
  });
  EXPECT_EQ(bad, 0u);
}

// The packed encoder (sign from x, |x| * f, mul.rn or mul.ftz) against per-element reference
// encoding of mul(x, f), on random and special values.
TEST(E2m1Fast, PackedEncoderMatchesPerElementReference) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<uint32_t> bitsd;
  const float specials[] = {0.0f, -0.0f, 0.25f, -0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -5.0f, 6.0f,
                            INFINITY, -INFINITY, 1e-40f, -1e-40f, 3.4e38f, -3.4e38f, 5.0000005f, 4.9999995f};
  const float factors[] = {1.0f, 0.5f, 0.75f, 3.0e-5f, 1.7e3f, 3.4e38f, 1e-38f, 0.0f};
  int64_t checked = 0;
  for (int iter = 0; iter < 200000; ++iter) {
    float x[8];
    for (float& v : x) {
      const uint32_t r = bitsd(rng);
      v = (r & 3) == 0 ? specials[r % (sizeof(specials) / sizeof(float))] : format::bits_float(bitsd(rng));
      if (format::is_nan(v)) v = 1.5f;
    }
    const float f = (iter % 3 == 0) ? factors[iter % 8] : format::abs_f(format::bits_float(bitsd(rng)));
    if (format::is_nan(f) || format::abs_f(f) > 3.4028235e38f) continue;
    bool has_inf = false;
    for (float v : x) has_inf |= format::abs_f(v) > 3.4028235e38f;
    // The documented precondition: no 0 * Inf (f zero, or subnormal under FTZ, with an infinite x).
    const bool rn_ok = !(has_inf && f == 0.0f);
    const bool ftz_ok = !(has_inf && f < 1.17549435e-38f);
    uint32_t want_rn = 0, want_ftz = 0;
    for (int i = 0; i < 8; ++i) {
      want_rn |= format::float_to_e2m1(format::mul_rn(x[i], f)) << (4 * i);
      want_ftz |= format::float_to_e2m1(format::mul_ftz(x[i], f)) << (4 * i);
    }
    if (rn_ok) ASSERT_EQ(quant::e2m1x8_encode_fast<false>(x, f), want_rn) << "f=" << f;
    if (ftz_ok) ASSERT_EQ(quant::e2m1x8_encode_fast<true>(x, f), want_ftz) << "f=" << f;
    ++checked;
  }
  EXPECT_GT(checked, 100000);
}

}  // namespace
}  // namespace fp4kit
