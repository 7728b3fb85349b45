// Loading and storing rows of BF16/FP16/FP32 host tensors for the CPU reference, and the
// correctly rounded double -> BF16/FP16/FP32 conversion of the reference GEMM.
#pragma once

#include <cmath>
#include <cstdint>

#include "fp4kit/types.h"
#include "format/float16.h"

namespace fp4kit::reference::detail {

// n consecutive elements starting at element `offset` of `base` (dtype t) -> FP32 (exact).
inline void load_row(const void* base, DType t, int64_t offset, int64_t n, float* out) {
  if (t == DType::kFP32) {
    const float* src = static_cast<const float*>(base) + offset;
    for (int64_t i = 0; i < n; ++i) out[i] = src[i];
    return;
  }
  const uint16_t* src = static_cast<const uint16_t*>(base) + offset;
  if (t == DType::kBF16) {
    for (int64_t i = 0; i < n; ++i) out[i] = format::bf16_to_float(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = format::fp16_to_float(src[i]);
  }
}

// FP32 values -> dtype t, round to nearest even (BF16/FP16), stored at element `offset` of `base`.
inline void store_row(void* base, DType t, int64_t offset, int64_t n, const float* in) {
  if (t == DType::kFP32) {
    float* dst = static_cast<float*>(base) + offset;
    for (int64_t i = 0; i < n; ++i) dst[i] = in[i];
    return;
  }
  uint16_t* dst = static_cast<uint16_t*>(base) + offset;
  if (t == DType::kBF16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = format::float_to_bf16(in[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = format::float_to_fp16(in[i]);
  }
}

inline double load_scalar_as_double(const void* base, DType t, int64_t i) {
  if (t == DType::kFP32) return static_cast<const float*>(base)[i];
  const uint16_t b = static_cast<const uint16_t*>(base)[i];
  return t == DType::kBF16 ? format::bf16_to_float(b) : format::fp16_to_float(b);
}

// x rounded to nearest-even in a binary format with `frac_bits` fraction bits, smallest normal
// exponent `emin` (gradual underflow below it) and largest finite value `max_finite`; overflow
// gives ±Inf, NaN and ±Inf pass through, the sign of zero is kept. Exact arithmetic: q is a power
// of two, a / q and r * q only move the exponent. Assumes the default FE_TONEAREST mode.
inline double round_to_binary_format(double x, int frac_bits, int emin, double max_finite) {
  if (!std::isfinite(x) || x == 0.0) return x;
  const double a = std::fabs(x);
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): the leading bit has exponent e - 1
  const int lead = (e - 1) > emin ? (e - 1) : emin;
  const double q = std::ldexp(1.0, lead - frac_bits);  // one ulp at a's binade
  double r = std::nearbyint(a / q) * q;
  if (r > max_finite) r = INFINITY;
  return std::copysign(r, x);
}

// Direct double -> BF16 / FP16 round-to-nearest-even (no intermediate FP32 rounding).
inline uint16_t double_to_bf16(double x) {
  // The rounded value is exactly representable in FP32 (same exponent range, fewer bits), so the
  // double -> float and float -> bf16 steps below are exact.
  return format::float_to_bf16(float(round_to_binary_format(x, 7, -126, 0x1.fep127)));
}
inline uint16_t double_to_fp16(double x) {
  return format::float_to_fp16(float(round_to_binary_format(x, 10, -14, 65504.0)));
}

inline void store_double(void* base, DType t, int64_t i, double v) {
  switch (t) {
    case DType::kFP32: static_cast<float*>(base)[i] = float(v); break;  // hardware RNE
    case DType::kBF16: static_cast<uint16_t*>(base)[i] = double_to_bf16(v); break;
    default: static_cast<uint16_t*>(base)[i] = double_to_fp16(v); break;
  }
}

}  // namespace fp4kit::reference::detail
