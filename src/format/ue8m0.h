// UE8M0 scale byte (MX formats): value 2^(code-127); 0xFF = NaN; no sign, no mantissa.
#pragma once

#include "format/host_device.h"

namespace fp4kit::format {

// Decode as FlashInfer does: the float whose bits are code << 23. Code 0 therefore decodes to
// 0.0 (not 2^-127), code 0xFF to +Inf (treated as NaN by callers).
FP4KIT_HD float ue8m0_to_float(uint8_t code) { return bits_float(uint32_t(code) << 23); }

// Round up to the next power of two (cudaRoundPosInf), saturating at 0xFE (2^127).
// 0 -> 0x00, NaN -> 0xFF, +Inf -> 0xFE. Negative inputs are treated by magnitude.
FP4KIT_HD uint8_t float_to_ue8m0_ceil(float v) {
  const uint32_t a = float_bits(v) & 0x7fffffffu;
  if (a > 0x7f800000u) return 0xffu;
  if (a >= 0x7f000000u) return 0xfeu;  // > 2^127 (incl. Inf) saturates
  const uint32_t e = (a + 0x7fffffu) >> 23;
  return uint8_t(e);
}

// 2^(127 - code) for code in [1, 254] — the reciprocal of a decoded scale, exact.
// Code 0 gives 1.0 as in FlashInfer's exp2f_rcp. Results below FP32's normal range (code 254)
// are exact subnormals here; `ftz` flushes them like ex2.approx.ftz does.
FP4KIT_HD float ue8m0_reciprocal(uint8_t code, bool ftz) {
  if (code == 0) return 1.0f;
  const int e = 127 - int(code) + 127;  // biased exponent of 2^(127-code)
  if (e >= 1) return bits_float(uint32_t(e) << 23);
  if (ftz) return 0.0f;
  return bits_float(1u << (22 + e));  // e in {0}: 2^-127 subnormal
}

}  // namespace fp4kit::format
