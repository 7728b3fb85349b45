// The FP32 operations the quantization recipes are written in, with identical meaning on host and
// device. Device code spells the rounding explicitly so that nvcc flags (-use_fast_math, -ftz)
// cannot change the numerics.
#pragma once

#include "format/host_device.h"

namespace fp4kit::format {

FP4KIT_HD float flush_subnormal(float x) {
  return (float_bits(x) & 0x7f800000u) == 0 ? bits_float(float_bits(x) & 0x80000000u) : x;
}

// IEEE multiply and divide, round to nearest even, subnormals kept.
FP4KIT_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FP4KIT_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// mul.rn.ftz.f32: subnormal inputs and results are flushed to sign-preserving zero.
FP4KIT_HD float mul_ftz(float a, float b) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("mul.rn.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return flush_subnormal(flush_subnormal(a) * flush_subnormal(b));
#endif
}

// rcp.approx.ftz.f32. The GPU instruction is not correctly rounded (PTX: max error ~1 ulp); the
// host emulation returns the correctly rounded reciprocal with FTZ on input and output. The two can
// differ in the last bit for some inputs — the one documented CPU/GPU difference of kFast.
// (1/±0 = ±Inf, 1/±Inf = ±0, NaN -> NaN on both.)
FP4KIT_HD float rcp_approx_ftz(float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm volatile("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#else
  return flush_subnormal(1.0f / flush_subnormal(x));
#endif
}

FP4KIT_HD float fmax_nan_ignoring(float a, float b) {
  // fmaxf semantics: a NaN operand is ignored.
  if (is_nan(a)) return b;
  if (is_nan(b)) return a;
  return a > b ? a : b;
}

FP4KIT_HD float abs_f(float x) { return bits_float(float_bits(x) & 0x7fffffffu); }

}  // namespace fp4kit::format
