// CPU checks of the prepacked weight layout and of the register decode arithmetic, so that the
// GPU kernels start from a layout proven here (no GPU needed).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "format/e2m1.h"
#include "format/e4m3.h"
#include "format/float16.h"
#include "gemm/prepacked_layout.h"

using namespace fp4kit;
using namespace fp4kit::gemm_impl;

namespace {

// The kernels' pair decodes (gemm/fragment_bits.h, host-device) for a runtime pair index.
uint32_t bf16_pair(uint32_t w, int p) {
  switch (p) {
    case 0: return bf16_pair_bits<0>(w);
    case 1: return bf16_pair_bits<1>(w);
    case 2: return bf16_pair_bits<2>(w);
    default: return bf16_pair_bits<3>(w);
  }
}
uint32_t fp16_pair(uint32_t w, int p) {
  switch (p) {
    case 0: return fp16_pair_bits<0>(w);
    case 1: return fp16_pair_bits<1>(w);
    case 2: return fp16_pair_bits<2>(w);
    default: return fp16_pair_bits<3>(w);
  }
}
uint16_t bf16_scale(uint8_t b) { return uint16_t(b * 16u + 0x7000u); }
uint16_t fp16_scale(uint8_t b) { return uint16_t(uint32_t(b) << 7); }

bool bf16_representable(double v) {
  const float f = float(v);
  return double(f) == v && double(format::bf16_to_float(format::float_to_bf16(f))) == v;
}
bool fp16_representable(double v) {
  const float f = float(v);
  return double(f) == v && double(format::fp16_to_float(format::float_to_fp16(f))) == v;
}

}  // namespace

// Every code nibble x every finite E4M3 scale: the shifted decodes multiply to w*sf*2^-7 exactly
// (the product is representable, so HMUL2's rounding is exact).
TEST(PrepackedLayout, DecodeArithmeticIsExact) {
  for (int sfb = 0; sfb < 256; ++sfb) {
    if ((sfb & 0x7f) == 0x7f) continue;  // NaN scales are rejected by prepack
    const float sf = format::e4m3_to_float(uint8_t(sfb));
    const uint8_t enc = encode_prepacked_scale(uint8_t(sfb));
    for (uint32_t nib = 0; nib < 16; ++nib) {
      // Prepack moves sign and zero of the scale into the code.
      uint32_t code = nib;
      if (sfb & 0x80) code ^= 8u;
      if ((sfb & 0x7f) == 0) code = 0;
      const double want = double(format::e2m1_to_float(nib)) * double(sf) / 128.0;
      const uint32_t w = place_code(code, 0);  // pair 0, low half
      const double wb = format::bf16_to_float(uint16_t(bf16_pair(w, 0)));
      const double sb = format::bf16_to_float(bf16_scale(enc));
      ASSERT_EQ(wb * sb, want) << "bf16 nib " << nib << " sf " << sfb;
      ASSERT_TRUE(bf16_representable(wb * sb));
      const double wh = format::fp16_to_float(uint16_t(fp16_pair(w, 0)));
      const double sh = format::fp16_to_float(fp16_scale(enc));
      ASSERT_EQ(wh * sh, want) << "fp16 nib " << nib << " sf " << sfb;
      ASSERT_TRUE(fp16_representable(wh * sh));
    }
  }
}

// place_code puts each element's four bits on distinct positions (the eight elements fill the word)
// and extract_code inverts it.
TEST(PrepackedLayout, CodePlacementIsABijection) {
  uint32_t all = 0;
  for (int i = 0; i < 8; ++i) {
    const uint32_t bits = place_code(15u, i);
    EXPECT_EQ(__builtin_popcount(bits), 4) << i;
    EXPECT_EQ(all & bits, 0u) << i;
    all |= bits;
    for (uint32_t nib = 0; nib < 16; ++nib) EXPECT_EQ(extract_code(place_code(nib, i), i), nib) << i;
  }
  EXPECT_EQ(all, 0xffffffffu);
}

// Every pair decode, for every combination of its two codes and with the other six elements set to
// random codes: the low half is a_{2p}'s code as e2m1 * 2^-126 (BF16) / 2^-14 (FP16), the high half
// a_{2p+1}'s.
TEST(PrepackedLayout, PairDecodesAreExactForEveryCode) {
  std::mt19937 rng(3);
  for (int p = 0; p < 4; ++p)
    for (uint32_t lo = 0; lo < 16; ++lo)
      for (uint32_t hi = 0; hi < 16; ++hi)
        for (int trial = 0; trial < 8; ++trial) {
          uint32_t w = place_code(lo, 2 * p) | place_code(hi, 2 * p + 1);
          for (int i = 0; i < 8; ++i)
            if (i / 2 != p) w |= place_code(trial == 0 ? 0u : rng() & 15u, i);
          const uint32_t b = bf16_pair(w, p), h = fp16_pair(w, p);
          const uint32_t code[2] = {lo, hi};
          for (int half = 0; half < 2; ++half) {
            const double want = format::e2m1_to_float(uint8_t(code[half]));
            const uint16_t bb = uint16_t(b >> (16 * half)), hh = uint16_t(h >> (16 * half));
            ASSERT_EQ(double(format::bf16_to_float(bb)), want * std::ldexp(1.0, -126)) << p << " " << lo << " " << hi;
            ASSERT_EQ(double(format::fp16_to_float(hh)), want * std::ldexp(1.0, -14)) << p << " " << lo << " " << hi;
            // -0 stays a sign bit only (no stray exponent or mantissa bits)
            if (code[half] == 8) {
              ASSERT_EQ(bb, 0x8000u);
              ASSERT_EQ(hh, 0x8000u);
            }
          }
        }
}

// Prepack on the host, then read it back the way the kernels do (fragment by fragment) and compare
// with the checkpoint's decoded values, at ragged shapes, for linear and 128x4 source scales.
TEST(PrepackedLayout, FragmentsReproduceTheWeights) {
  std::mt19937 rng(7);
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 16}, {17, 48}, {64, 64}, {100, 208}, {130, 1040}}) {
    for (int layout : {0, 1}) {
      const int64_t sf_cols = k / 16;
      std::vector<uint8_t> codes(n * k / 2);
      for (auto& c : codes) c = uint8_t(rng());
      const int64_t padded_cols = (sf_cols + 3) / 4 * 4;
      const int64_t sbytes = layout == 0 ? n * sf_cols : (n + 127) / 128 * 128 * padded_cols;
      std::vector<uint8_t> scales(sbytes, 0);
      auto sf_of = [&](int64_t r, int64_t b) -> uint8_t& {
        return scales[source_scale_offset(layout, r, b, sf_cols)];
      };
      for (int64_t r = 0; r < n; ++r)
        for (int64_t b = 0; b < sf_cols; ++b) {
          uint8_t v = uint8_t(rng() % 0x7f);         // finite, incl. 0 and subnormals
          if (rng() % 7 == 0) v |= 0x80;             // some negative scales
          if (v == 0xff) v = 0xfe;
          sf_of(r, b) = v;
        }
      const PrepackedShape shape = prepacked_shape(n, k);
      std::vector<uint8_t> packed(shape.bytes());
      for (int64_t t = 0; t < shape.row_tiles; ++t)
        for (int64_t j = 0; j < shape.k_chunks; ++j)
          for (int lane = 0; lane < 32; ++lane) {
            uint32_t words[4];
            uint8_t sc[8];
            ASSERT_TRUE(prepack_lane(codes.data(), scales.data(), layout, n, k, t, j, lane, words, sc));
            const int64_t chunk = t * shape.k_chunks + j;
            std::memcpy(&packed[(chunk * 32 + lane) * 16], words, 16);
            if ((lane & 3) == 0) std::memcpy(&packed[shape.code_bytes() + chunk * 64 + (lane >> 2) * 8], sc, 8);
          }
      std::vector<int> seen(shape.n_pad * shape.k_pad, 0);
      for (int64_t t = 0; t < shape.row_tiles; ++t)
        for (int64_t j = 0; j < shape.k_chunks; ++j)
          for (int lane = 0; lane < 32; ++lane)
            for (int s = 0; s < 4; ++s) {
              const int64_t chunk = t * shape.k_chunks + j;
              uint32_t w;
              std::memcpy(&w, &packed[(chunk * 32 + lane) * 16 + 4 * s], 4);
              for (int i = 0; i < 8; ++i) {
                const int64_t row = 16 * t + fragment_row(lane, i);
                const int64_t kk = 64 * j + fragment_k(lane, s, i);
                const uint32_t nib = extract_code(w, i);
                const int h = (i >> 1) & 1;
                const uint8_t sb = packed[shape.code_bytes() + chunk * 64 + (lane >> 2) * 8 + h * 4 + s];
                const double got = double(format::e2m1_to_float(nib)) * decode_prepacked_scale(sb);
                double want = 0.0;
                if (row < n && kk < k) {
                  const uint8_t byte = codes[row * (k / 2) + kk / 2];
                  const uint32_t c = (kk & 1) ? byte >> 4 : byte & 15u;
                  want = double(format::e2m1_to_float(c)) * double(format::e4m3_to_float(sf_of(row, kk / 16)));
                }
                ASSERT_EQ(got, want) << "n=" << n << " k=" << k << " row " << row << " k " << kk;
                seen[row * shape.k_pad + kk]++;
              }
            }
      for (int v : seen) ASSERT_EQ(v, 1);  // every (row, k) of the padded matrix exactly once
    }
  }
}

TEST(PrepackedLayout, NanScaleIsReported) {
  std::vector<uint8_t> codes(16 * 8, 0x11), scales(16, 0x38);
  scales[3] = 0x7f;
  uint32_t words[4];
  uint8_t sc[8];
  bool any_bad = false;
  for (int lane = 0; lane < 32; ++lane)
    any_bad |= !prepack_lane(codes.data(), scales.data(), 0, 16, 16, 0, 0, lane, words, sc);
  EXPECT_TRUE(any_bad);
}
