// UE8M0 scale bytes (MX formats) against straight formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "format/host_device.h"
#include "format/ue8m0.h"

namespace {

using namespace fp4kit::format;

// The documented encode: the smallest power of two >= |v| ("round up", cudaRoundPosInf), as a
// biased exponent, clamped to [1, 254] for non-zero finite v (code 0 means "zero scale" and is
// never produced for v != 0; 2^127 is the largest scale); 0 -> 0, ±Inf -> 254, NaN -> 255.
uint8_t ue8m0_ceil_formula(float v) {
  if (std::isnan(v)) return 255;
  const double a = std::fabs(double(v));
  if (a == 0.0) return 0;
  if (std::isinf(a)) return 254;
  int e = 0;
  const double f = std::frexp(a, &e);          // a = f * 2^e, f in [0.5, 1)
  const int ceil_log2 = (f == 0.5) ? e - 1 : e;  // exact powers of two stay
  const int code = ceil_log2 + 127;
  return uint8_t(code < 1 ? 1 : (code > 254 ? 254 : code));
}

TEST(UE8M0, EncodeMatchesFormula) {
  std::vector<float> xs = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                           0x1p127f, 0x1p-127f, 0x1p-126f, 0x1p-149f, 1.0f, 6.0f, 448.0f};
  for (int e = -149; e <= 127; ++e) {
    const float p = std::ldexp(1.0f, e);
    xs.insert(xs.end(), {p, std::nextafter(p, 0.0f), std::nextafter(p, INFINITY), 1.5f * p, -p});
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) xs.push_back(bits_float(uint32_t(rng())));
  int n = 0;
  for (float x : xs) {
    ASSERT_EQ(float_to_ue8m0_ceil(x), ue8m0_ceil_formula(x)) << "x=" << x << " bits " << float_bits(x);
    ++n;
  }
  EXPECT_GT(n, 200000);
}

TEST(UE8M0, DecodeEveryCode) {
  EXPECT_EQ(ue8m0_to_float(0), 0.0f);  // FlashInfer's convention: code 0 decodes to 0
  for (int c = 1; c <= 254; ++c) EXPECT_EQ(ue8m0_to_float(uint8_t(c)), std::ldexp(1.0f, c - 127)) << c;
  EXPECT_TRUE(std::isinf(ue8m0_to_float(255)));  // callers treat 0xFF as NaN
}

TEST(UE8M0, ReciprocalIsExactPowerOfTwo) {
  EXPECT_EQ(ue8m0_reciprocal(0, false), 1.0f);  // exp2f_rcp(0) = 1
  EXPECT_EQ(ue8m0_reciprocal(0, true), 1.0f);
  for (int c = 1; c <= 253; ++c) {
    EXPECT_EQ(ue8m0_reciprocal(uint8_t(c), false), std::ldexp(1.0f, 127 - c)) << c;
    EXPECT_EQ(ue8m0_reciprocal(uint8_t(c), true), std::ldexp(1.0f, 127 - c)) << c;
  }
  EXPECT_EQ(ue8m0_reciprocal(254, false), 0x1p-127f);  // subnormal, exact
  EXPECT_EQ(ue8m0_reciprocal(254, true), 0.0f);        // flushed, as ex2.approx.ftz does
}

}  // namespace
