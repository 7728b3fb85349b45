// Eight E2M1 codes -> packed BF16 / FP16 pairs by byte permutes (format/e2m1x8.h), against the
// definition (format::e2m1_to_float, exact in both 16-bit types): every code in every one of the eight
// positions, with every other position holding each code too, and random words.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "format/e2m1.h"
#include "format/e2m1x8.h"
#include "format/float16.h"

namespace {

using namespace fp4kit::format;

// The pairs the definition gives for word w (element i = bits 4i..4i+3, element 2j in the low half).
void expected(uint32_t w, bool bf16, uint32_t (&out)[4]) {
  for (int j = 0; j < 4; ++j) {
    uint32_t pair = 0;
    for (int h = 0; h < 2; ++h) {
      const float v = e2m1_to_float((w >> (4 * (2 * j + h))) & 15u);
      const uint16_t bits = bf16 ? float_to_bf16(v) : float_to_fp16(v);
      pair |= uint32_t(bits) << (16 * h);
    }
    out[j] = pair;
  }
}

void check(uint32_t w) {
  uint32_t got_b[4], got_h[4], want_b[4], want_h[4];
  e2m1x8_to_bf16x2(w, got_b);
  e2m1x8_to_f16x2(w, got_h);
  expected(w, true, want_b);
  expected(w, false, want_h);
  for (int j = 0; j < 4; ++j) {
    ASSERT_EQ(got_b[j], want_b[j]) << std::hex << "bf16 w=0x" << w << " word " << j;
    ASSERT_EQ(got_h[j], want_h[j]) << std::hex << "fp16 w=0x" << w << " word " << j;
  }
}

TEST(E2m1x8, EveryCodeInEveryPosition) {
  for (uint32_t fill = 0; fill < 16; ++fill)
    for (int pos = 0; pos < 8; ++pos)
      for (uint32_t code = 0; code < 16; ++code) {
        uint32_t w = fill * 0x11111111u;
        w = (w & ~(15u << (4 * pos))) | (code << (4 * pos));
        check(w);
        if (HasFatalFailure()) return;
      }
}

TEST(E2m1x8, RandomWords) {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 100000; ++i) {
    check(uint32_t(rng()));
    if (HasFatalFailure()) return;
  }
}

TEST(E2m1x8, GatherByteTakesByteCOfEachWord) {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 10000; ++i) {
    const uint32_t w[4] = {uint32_t(rng()), uint32_t(rng()), uint32_t(rng()), uint32_t(rng())};
    for (uint32_t c = 0; c < 4; ++c) {
      uint32_t want = 0;
      for (int q = 0; q < 4; ++q) want |= ((w[q] >> (8 * c)) & 0xffu) << (8 * q);
      ASSERT_EQ(gather_byte(w[0], w[1], w[2], w[3], c), want) << "c=" << c;
    }
  }
}

// The host byte_perm against the PRMT definition on a few selectors (the device uses __byte_perm).
TEST(E2m1x8, BytePermSelectsBytes) {
  EXPECT_EQ(byte_perm(0x33221100u, 0x77665544u, 0x3210u), 0x33221100u);
  EXPECT_EQ(byte_perm(0x33221100u, 0x77665544u, 0x7654u), 0x77665544u);
  EXPECT_EQ(byte_perm(0x33221100u, 0x77665544u, 0x5140u), 0x55114400u);
  EXPECT_EQ(byte_perm(0x33221100u, 0x77665544u, 0x0000u), 0x00000000u);
}

}  // namespace
