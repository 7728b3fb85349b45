// FP8 E4M3 ("e4m3fn"): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no Inf; S.1111.111 is NaN.
// Max finite 448 (0x7E), min subnormal 2^-9.
// Encoding is round-to-nearest-even with saturation (PTX cvt.rn.satfinite.e4m3x2.f32,
// __nv_fp8_e4m3(float)): |x| >= 464 and ±Inf give ±448, every NaN gives 0x7F (the instruction
// drops the sign of a NaN: measured on H100; x86 and CUDA also disagree on the signs of the NaNs
// they generate, so a sign-keeping rule would make CPU and GPU results differ).
#pragma once

#include "format/host_device.h"

namespace fp4kit::format {

FP4KIT_HD float e4m3_to_float(uint8_t b) {
  const uint32_t sign = uint32_t(b & 0x80u) << 24;
  const uint32_t exp = (b >> 3) & 15u, man = b & 7u;
  if (exp == 15 && man == 7) return bits_float(sign | 0x7fc00000u);
  if (exp == 0) {
    const float mag = float(man) * 0.001953125f;  // man * 2^-9, exact
    return bits_float(float_bits(mag) | sign);
  }
  return bits_float(sign | ((exp + 120u) << 23) | (man << 20));
}

FP4KIT_HD uint8_t float_to_e4m3(float x) {
  const uint32_t u = float_bits(x);
  const uint8_t sign = uint8_t((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fu;                   // NaN, any sign
  if (a >= 0x43e80000u) return uint8_t(sign | 0x7eu);  // >= 464 (incl. Inf): saturate to 448
  if (a < 0x3c800000u) {
    // Below 2^-6: subnormal E4M3, value = m * 2^-9 with m in [0, 8] (8 is the smallest normal).
    const float q = bits_float(a) * 512.0f;  // exact
    uint32_t m = uint32_t(q);
    const float frac = q - float(m);
    if (frac > 0.5f || (frac == 0.5f && (m & 1u))) ++m;
    return uint8_t(sign | m);
  }
  // Normal: round the 23-bit mantissa to 3 bits (RNE); a carry correctly bumps the exponent.
  uint32_t r = a + 0x7ffffu + ((a >> 20) & 1u);
  r = (r >> 20) - (120u << 3);  // rebias exponent 127 -> 7
  return uint8_t(sign | r);
}

}  // namespace fp4kit::format
