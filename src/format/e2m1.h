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
// every a <= 0.25 give 0). The grid's spacing is 0.5 below 2, 1 below 4 and 2 above, so adding and
// subtracting 1.5 * 2^(23 + log2 spacing) — whose FP32 ulp is that spacing — rounds `a` to it with the
// FPU's round-to-nearest-even, and the even multiple of the spacing is the even code (the offsets are
// even multiples of it): 0.25 -> 0, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4. Then min(., 6); NaN (and a
// negative a) is mapped to 0 first (max with 0, ignoring NaN), Inf stays Inf through the two adds. 8 instructions on a GPU
// (the MoE epilogues and the large-batch W4A4 round trips run it per element; a sum of the grid's
// seven steps, the previous form, was 20).
FP4KIT_HD float e2m1_round_magnitude(float a) {
#if defined(__CUDA_ARCH__)
  const float b = fmaxf(a, 0.0f);  // max.f32: a NaN operand is ignored
  const float m = b < 2.0f ? 0x1.8p22f : (b < 4.0f ? 0x1.8p23f : 0x1.8p24f);
  return fminf(__fsub_rn(__fadd_rn(b, m), m), 6.0f);
#else
  const float b = is_nan(a) || a < 0.0f ? 0.0f : a;
  const float m = b < 2.0f ? 0x1.8p22f : (b < 4.0f ? 0x1.8p23f : 0x1.8p24f);
  const float r = (b + m) - m;
  return r < 6.0f ? r : 6.0f;
#endif
}

// ModelOpt's convention: sign bit set iff y < 0 (so -0.0 gives 0x0, -0.1 gives 0x8).
FP4KIT_HD uint32_t float_to_e2m1_modelopt(float y) {
  return (y < 0.0f ? 8u : 0u) | e2m1_magnitude_code(y < 0.0f ? -y : y);
}

FP4KIT_HD uint8_t pack_e2m1x2(uint32_t even, uint32_t odd) { return uint8_t((even & 15u) | ((odd & 15u) << 4)); }
FP4KIT_HD uint32_t e2m1_low(uint8_t byte) { return byte & 15u; }
FP4KIT_HD uint32_t e2m1_high(uint8_t byte) { return byte >> 4; }

}  // namespace fp4kit::format
