// FP4 E2M1: 1 sign, 2 exponent (bias 1), 1 mantissa bit; no Inf/NaN; max 6.
// Codes 0..7 = {0, 0.5, 1, 1.5, 2, 3, 4, 6}; bit 3 is the sign (0x8 = -0).
// Packing: element 2j in the low nibble of byte j, element 2j+1 in the high nibble.
#pragma once

#include "format/host_device.h"

namespace fp4kit::format {

FP4KIT_HD float e2m1_magnitude(uint32_t code3) {
  // 0, 0.5, 1, 1.5, 2, 3, 4, 6 without a table (tables become local memory in device code).
  const uint32_t e = code3 >> 1, m = code3 & 1u;
  if (e == 0) return m ? 0.5f : 0.0f;
  return bits_float(((e + 126u) << 23) | (m << 22));  // (1 + m/2) * 2^(e-1)
}

FP4KIT_HD float e2m1_to_float(uint32_t code) {
  const float mag = e2m1_magnitude(code & 7u);
  return (code & 8u) ? -mag : mag;
}

// |y| -> magnitude code, round-to-nearest-even on the E2M1 grid, saturating at 6.
// Ties 0.25->0, 0.75->1.0, 1.25->1.0, 1.75->2.0, 2.5->2.0, 3.5->4.0, 5.0->4.0 (even codes win).
// NaN gives 0.
FP4KIT_HD uint32_t e2m1_magnitude_code(float a) {
  return uint32_t(a > 0.25f) + uint32_t(a >= 0.75f) + uint32_t(a > 1.25f) + uint32_t(a >= 1.75f) +
         uint32_t(a > 2.5f) + uint32_t(a >= 3.5f) + uint32_t(a > 5.0f);
}

// The FlashInfer/PTX cvt.rn.satfinite.e2m1 convention: the sign bit is the sign bit of y, so
// -0.0 and negative values that round to zero give code 0x8. ±Inf -> ±6. NaN -> +0 (code 0) whatever
// its sign bit: E2M1 has no NaN, and the sign of a NaN differs between x86 (default NaN negative,
// input NaN signs propagate) and CUDA (every arithmetic NaN is 0x7fffffff), so only a sign-free rule
// keeps CPU and GPU bit-identical (e.g. 0 * Inf in a kFast block whose scale underflowed).
FP4KIT_HD uint32_t float_to_e2m1(float y) {
  const uint32_t s = is_nan(y) ? 0u : (float_bits(y) >> 28) & 8u;
  return s | e2m1_magnitude_code(y < 0.0f ? -y : y);
}

// e2m1_magnitude(e2m1_magnitude_code(a)): the grid value |y| rounds to (RNE, saturating at 6; NaN and
// every a <= 0.25 give 0), as a sum of the grid's steps that `a` passes (0.5 four times, then 1, 1 and
// 2): each comparison is independent of the others and every partial sum is exact, so on a GPU the
// dependent chain is a compare, a select and three adds (the code's sum and its decode were one
// chain of ~15 instructions; the MoE epilogues round-trip h through NVFP4 on their tails).
FP4KIT_HD float e2m1_round_magnitude(float a) {
  const float s0 = (a > 0.25f ? 0.5f : 0.0f) + (a >= 0.75f ? 0.5f : 0.0f);
  const float s1 = (a > 1.25f ? 0.5f : 0.0f) + (a >= 1.75f ? 0.5f : 0.0f);
  const float s2 = (a > 2.5f ? 1.0f : 0.0f) + (a >= 3.5f ? 1.0f : 0.0f);
  const float s3 = a > 5.0f ? 2.0f : 0.0f;
  return (s0 + s1) + (s2 + s3);
}

// ModelOpt's convention: sign bit set iff y < 0 (so -0.0 gives 0x0, -0.1 gives 0x8).
FP4KIT_HD uint32_t float_to_e2m1_modelopt(float y) {
  return (y < 0.0f ? 8u : 0u) | e2m1_magnitude_code(y < 0.0f ? -y : y);
}

FP4KIT_HD uint8_t pack_e2m1x2(uint32_t even, uint32_t odd) { return uint8_t((even & 15u) | ((odd & 15u) << 4)); }
FP4KIT_HD uint32_t e2m1_low(uint8_t byte) { return byte & 15u; }
FP4KIT_HD uint32_t e2m1_high(uint8_t byte) { return byte >> 4; }

}  // namespace fp4kit::format
