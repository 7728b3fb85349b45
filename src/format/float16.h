// BF16 and FP16 <-> FP32 by bit manipulation (round-to-nearest-even), host and device.
// The CPU reference stores 16-bit tensors as raw bits (uint16_t) so it needs no CUDA headers.
#pragma once

#include "format/host_device.h"

namespace fp4kit::format {

FP4KIT_HD float bf16_to_float(uint16_t b) { return bits_float(uint32_t(b) << 16); }

FP4KIT_HD uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if (is_nan(f)) return uint16_t((u >> 16) | 0x40);  // quiet NaN, keep sign
  u += 0x7fffu + ((u >> 16) & 1u);                   // RNE (overflow rounds to Inf)
  return uint16_t(u >> 16);
}

FP4KIT_HD float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // Inf / NaN
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24, exact in FP32.
    const float mag = float(man) * 5.9604644775390625e-8f;
    return bits_float(float_bits(mag) | sign);
  }
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

FP4KIT_HD uint16_t float_to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 rounds to Inf
  if (a < 0x38800000u) {
    // Result is subnormal (or zero): value / 2^-24 rounded to an integer, RNE.
    const float q = bits_float(a) * 16777216.0f;  // exact: power-of-two scaling of a normal/subnormal
    uint32_t m = uint32_t(q);
    const float frac = q - float(m);
    if (frac > 0.5f || (frac == 0.5f && (m & 1u))) ++m;
    return uint16_t(sign | m);  // m == 0x400 becomes the smallest normal, as it should
  }
  uint32_t r = a - 0x38000000u;  // rebias exponent 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}

}  // namespace fp4kit::format
