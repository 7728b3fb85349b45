// The FP32 helpers of the recipes (format/fp32_ops.h) and the E2M1 packing helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "format/e2m1.h"
#include "format/e4m3.h"
#include "format/fp32_ops.h"

namespace {

using namespace fp4kit::format;

TEST(Fp32Ops, FlushAndFtzMultiply) {
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float minn = std::numeric_limits<float>::min();
  EXPECT_EQ(float_bits(flush_subnormal(tiny)), 0u);
  EXPECT_EQ(float_bits(flush_subnormal(-tiny)), 0x80000000u);
  EXPECT_EQ(flush_subnormal(minn), minn);
  EXPECT_EQ(mul_ftz(tiny, 1e30f), 0.0f);          // subnormal input flushed first
  EXPECT_EQ(mul_ftz(minn, 0.5f), 0.0f);           // subnormal result flushed
  EXPECT_EQ(mul_rn(minn, 0.5f), minn / 2);        // ...but kept by mul_rn
  EXPECT_EQ(float_bits(mul_ftz(-minn, 0.5f)), 0x80000000u);
  EXPECT_EQ(mul_ftz(3.0f, 5.0f), 15.0f);
}

TEST(Fp32Ops, HostRcpIsCorrectlyRoundedWithFtz) {
  std::mt19937 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const float x = bits_float(uint32_t(rng()));
    if (std::isnan(x)) continue;
    const float want = flush_subnormal(1.0f / flush_subnormal(x));
    EXPECT_EQ(float_bits(rcp_approx_ftz(x)), float_bits(want));
  }
  EXPECT_EQ(float_bits(rcp_approx_ftz(6.0f)), 0x3e2aaaabu);  // == 1.0f / 6.0f on the host
  EXPECT_EQ(rcp_approx_ftz(0.0f), INFINITY);
  EXPECT_EQ(rcp_approx_ftz(std::numeric_limits<float>::denorm_min()), INFINITY);  // input flushed
  EXPECT_EQ(rcp_approx_ftz(std::numeric_limits<float>::max()), 0.0f);              // output flushed
}

TEST(Fp32Ops, FmaxIgnoresNaN) {
  EXPECT_EQ(fmax_nan_ignoring(NAN, 2.0f), 2.0f);
  EXPECT_EQ(fmax_nan_ignoring(2.0f, NAN), 2.0f);
  EXPECT_TRUE(std::isnan(fmax_nan_ignoring(NAN, NAN)));
  EXPECT_EQ(fmax_nan_ignoring(0.0f, INFINITY), INFINITY);
  EXPECT_EQ(float_bits(abs_f(-0.0f)), 0u);
}

TEST(E2M1, PackingNibbleOrder) {
  EXPECT_EQ(pack_e2m1x2(0x1, 0xF), 0xF1);  // even element in the low nibble
  EXPECT_EQ(e2m1_low(0xF1), 0x1u);
  EXPECT_EQ(e2m1_high(0xF1), 0xFu);
  // Ties go to the even code (spec §1.1).
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const uint32_t want[] = {0, 2, 2, 4, 4, 6, 6};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(float_to_e2m1(ties[i]), want[i]) << ties[i];
    EXPECT_EQ(float_to_e2m1(-ties[i]), want[i] | 8u) << -ties[i];
  }
  EXPECT_EQ(float_to_e2m1(-0.0f), 8u);
  EXPECT_EQ(float_to_e2m1_modelopt(-0.0f), 0u);
  EXPECT_EQ(float_to_e2m1_modelopt(-0.1f), 8u);
  EXPECT_EQ(float_to_e2m1(INFINITY), 7u);
  EXPECT_EQ(float_to_e2m1(-INFINITY), 15u);
}

// The step sum (the MoE epilogues' round trip) equals the decoded code: every float in [0.125, 8]
// (where all thresholds lie), then both sides of that range, infinity and NaNs.
TEST(E2M1, RoundMagnitudeEqualsDecodedCode) {
  auto check = [](uint32_t bits) {
    const float a = bits_float(bits);
    const float want = e2m1_magnitude(e2m1_magnitude_code(a));
    ASSERT_EQ(float_bits(e2m1_round_magnitude(a)), float_bits(want)) << std::hexfloat << a;
  };
  for (uint32_t b = float_bits(0.125f); b <= float_bits(8.0f); ++b) check(b);
  for (uint32_t b = 0; b < float_bits(0.125f); b += 4099) check(b);
  for (uint32_t b = float_bits(8.0f); b < 0x7f800000u; b += 4099) check(b);
  for (uint32_t b : {0u, 1u, 0x7f7fffffu, 0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fffffffu}) check(b);
  // Negative inputs (callers pass |y|) give +0, as every step of the grid is above them.
  for (uint32_t b = 0x80000000u; b < 0xff800000u; b += 40009) check(b);
  for (uint32_t b : {0x80000000u, 0xbf800000u, 0xff800000u, 0xffc00000u}) check(b);
}

}  // namespace

namespace {

// NaN encodings do not depend on the NaN's sign (docs/NUMERICS.md: x86 and CUDA generate NaNs of
// different signs; the E4M3 rule is what cvt.rn.satfinite.e4m3x2.f32 does on H100).
TEST(Codecs, NaNEncodingsAreSignFree) {
  using namespace fp4kit::format;
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffffffffu}) {
    const float nan = bits_float(bits);
    EXPECT_EQ(float_to_e4m3(nan), 0x7F) << std::hex << bits;
    EXPECT_EQ(float_to_e2m1(nan), 0u) << std::hex << bits;
    EXPECT_EQ(float_to_e2m1_modelopt(nan), 0u) << std::hex << bits;
  }
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);  // the sign of zero is kept
  EXPECT_EQ(float_to_e4m3(-1e-9f), 0x80);
  EXPECT_EQ(float_to_e4m3(-INFINITY), 0xFE);
}

}  // namespace
