// Fast E2M1 encoding by one rounding addition (host + device).
//
// format::float_to_e2m1 (seven comparisons) is the definition; this is the same function written
// as a rounding trick, about a third of the instructions on the GPU. tests/quant/e2m1_fast_test.cpp
// proves e2m1_magnitude_code_fast(a) == format::e2m1_magnitude_code(a) for every non-NaN float32
// a >= 0 and e2m1_encode_fast(y) == format::float_to_e2m1(y) for every non-NaN float32 y.
//
// How it works, for a = |y| (not NaN):
//   a' = min(a, 6)                 every a >= 5 (exclusive) maps to code 7 already at 6; keeps e <= 2
//   e  = max(floor(log2 a'), 0)    E2M1 binade: [0,2) has step 0.5, [2,4) step 1, [4,8) step 2
//   M  = 2^(e+22) + e*2^e          a float whose ulp is 2^(e-1) = the E2M1 step in that binade,
//                                  plus an offset of 2e ulps
//   t  = a' + M                    ONE fp32 addition, round-to-nearest-even: rounds a' to the E2M1
//                                  grid exactly as RNE on the grid does (ties to even code), and
//                                  leaves code = 2e + round(a'/step) - ... in the low mantissa bits
//   code = bits(t) & 0x7fffff      (the exponent of t equals that of M since code <= 7)
// Derivation of the offset: with k = round(a'/2^(e-1)) in [0,4] (e=0) or [2,4] (e>=1), the code is
// 2e + k (e=0: codes 0..4 = 0,0.5,1,1.5,2; e=1: 4..6 = 2,3,4; e=2: 6..7 = 4,6 (8 is unreachable
// because a' <= 6)). bits(M) = ((E+22) << 23) + 2e with E = e + 127, i.e. E*(2^23+2) + 22*2^23 - 254.
#pragma once

#include "format/fp32_ops.h"
#include "format/host_device.h"

namespace fp4kit::quant {

// The biased exponent E = 127 + e of max(a', 1) from the bits of a' (a' in [0, 6]).
FP4KIT_HD uint32_t e2m1_binade(uint32_t a_bits) {
  const uint32_t v = a_bits > 0x3f800000u ? a_bits : 0x3f800000u;  // max(a', 1.0f) as integers
  return v >> 23;
}

FP4KIT_HD float e2m1_magic(uint32_t E) {
  return format::bits_float(E * ((1u << 23) + 2u) + (22u << 23) - 254u);
}

// The bits of t for a >= 0, a not NaN: bits 0..2 hold the magnitude code, bits 3..22 are zero.
FP4KIT_HD uint32_t e2m1_rounded_bits(float a) {
#if defined(__CUDA_ARCH__)
  const float c = fminf(a, 6.0f);
  const float t = __fadd_rn(c, e2m1_magic(e2m1_binade(__float_as_uint(c))));
#else
  const float c = a < 6.0f ? a : 6.0f;
  const float t = c + e2m1_magic(e2m1_binade(format::float_bits(c)));  // one fp32 add, RNE
#endif
  return format::float_bits(t);
}

// Magnitude code (0..7) of a >= 0, a not NaN (+Inf gives 7).
FP4KIT_HD uint32_t e2m1_magnitude_code_fast(float a) { return e2m1_rounded_bits(a) & 0x7fffffu; }

// Sign from the sign bit of y (like format::float_to_e2m1), magnitude as above. y not NaN.
FP4KIT_HD uint32_t e2m1_encode_fast(float y) {
  const uint32_t s = (format::float_bits(y) >> 28) & 8u;
  return s | e2m1_magnitude_code_fast(format::abs_f(y));
}

}  // namespace fp4kit::quant

namespace fp4kit::quant {

// (hi:lo) >> 4, low word, and (hi:lo) << 4, high word: one SHF each on the GPU.
FP4KIT_HD uint32_t funnel_right4(uint32_t lo, uint32_t hi) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(lo, hi, 4);
#else
  return uint32_t(((uint64_t(hi) << 32) | lo) >> 4);
#endif
}
FP4KIT_HD uint32_t funnel_left4(uint32_t lo, uint32_t hi) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_l(lo, hi, 4);
#else
  return uint32_t((((uint64_t(hi) << 32) | lo) << 4) >> 32);
#endif
}

// Eight E2M1 codes packed in a word (element i in bits 4i..4i+3) of y_i = x_i * f, where the
// caller guarantees that no x_i is NaN, f is finite and >= +0, and no y_i is 0 * Inf (f, or under
// FTZ a subnormal f, is zero while some x_i is infinite). Then sign(y_i) == sign(x_i) and
// |y_i| = |x_i| * f. kFtz selects mul.rn.ftz (kFast) instead of mul.rn; the magnitude code of a flushed
// subnormal is 0 either way and the sign comes from x, as format::float_to_e2m1(mul_ftz(x, f))
// also gives. Equal to packing format::float_to_e2m1(mul_*(x_i, f)) under those preconditions.
template <bool kFtz>
FP4KIT_HD uint32_t e2m1x8_encode_fast(const float (&x)[8], float f) {
  uint32_t mag = 0, sgn = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 8; ++i) {
#if defined(__CUDA_ARCH__)
    const float ax = fabsf(x[i]);  // folds into the multiply as an operand modifier
#else
    const float ax = format::abs_f(x[i]);
#endif
    const float a = kFtz ? format::mul_ftz(ax, f) : format::mul_rn(ax, f);
    // Shift each code in from the top so that element 0 ends in the lowest nibble.
    mag = funnel_right4(mag, e2m1_rounded_bits(a));  // low 4 bits of t = 0|code
  }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 7; i >= 0; --i) sgn = funnel_left4(format::float_bits(x[i]), sgn);  // top nibble of x_i
  return mag | (sgn & 0x88888888u);
}

}  // namespace fp4kit::quant
