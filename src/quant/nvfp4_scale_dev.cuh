// The NVFP4 block-scale recipe of format/block_recipes.h (nvfp4_block_scale), as the GPU kernels run
// it: the same FP32 operations in the same order, with
//   * format::float_to_e4m3 replaced by cvt.rn.satfinite.e4m3x2.f32 (equal for all 2^32 inputs,
//     NaN included: ConversionGpu.ExhaustiveEquivalence),
//   * format::e4m3_to_float replaced by cvt.rn.f16x2.e4m3x2 + exact f16 -> f32 (equal for all 256
//     codes, NaN payloads aside: ConversionGpu.E4m3DecodeAllCodes), and
//   * the terms that depend on the global scale S only (S * (1/6), 1/S, rcp(6), rcp(S), 6 * S)
//     evaluated once per S instead of once per block.
// The software conversions are branchy (~35 SASS instructions per block); this is about a third of
// the recipe's cost. NvfpScaleDev.MatchesRecipeForEveryAmax compares the result with
// format::nvfp4_block_scale for every non-negative float32 amax at a set of global scales; by
// construction (same operations, proven-equal primitives) it is equal for every input.
// (A NaN decoded scale only ever produces a NaN factor whose payload no output depends on.)
#pragma once

#include <cfloat>
#include <cstdint>

#include "fp4kit/types.h"
#include "format/block_recipes.h"
#include "format/fp32_ops.h"

namespace fp4kit::quant {

// E4M3 byte of x (RNE, satfinite; NaN -> 0x7F): one F2FP.
__device__ __forceinline__ uint32_t e4m3_encode_hw(float x) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  return r & 0xffu;
}

// E4M3 byte -> float (exact).
__device__ __forceinline__ float e4m3_decode_hw(uint32_t b) {
  uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(uint16_t(b)));
  return __half2float(__ushort_as_half(uint16_t(h2 & 0xffffu)));
}

// The parts of the recipe that depend on S only.
template <QuantNumerics kMode>
struct Nvfp4ScaleConst {
  float S;
  float a;  // kExact: S * (1/6);  kFast: rcp(6);  kModelOpt: 6 * S
  float b;  // kExact: 1 / S;      kFast: rcp(S);  kModelOpt: unused
};

template <QuantNumerics kMode>
__device__ __forceinline__ Nvfp4ScaleConst<kMode> nvfp4_scale_const(float S) {
  Nvfp4ScaleConst<kMode> c;
  c.S = S;
  if constexpr (kMode == QuantNumerics::kFast) {
    c.a = format::rcp_approx_ftz(6.0f);
    c.b = format::rcp_approx_ftz(S);
  } else if constexpr (kMode == QuantNumerics::kExact) {
    c.a = format::mul_rn(S, 1.0f / 6.0f);
    c.b = format::div_rn(1.0f, S);
  } else {
    c.a = format::mul_rn(6.0f, S);
    c.b = 0.0f;
  }
  return c;
}

// kExact's two halves: the scale byte of a block (a = S * (1/6)), and the factor of a nonzero block
// whose decoded scale byte is sfq (inv_s = 1/S): min(1 / (sfq * inv_s), FLT_MAX), a NaN giving
// FLT_MAX. Separate so that a kernel whose blocks share S can tabulate the factor per scale byte
// (moe_device.cuh).
__device__ __forceinline__ uint32_t nvfp4_exact_scale_byte_dev(float amax, float a) {
  return e4m3_encode_hw((amax != 0.0f) ? format::mul_rn(amax, a) : 0.0f);
}
__device__ __forceinline__ float nvfp4_exact_factor_dev(float sfq, float inv_s) {
  const float inv = format::div_rn(1.0f, format::mul_rn(sfq, inv_s));
  return inv < FLT_MAX ? inv : FLT_MAX;
}

// == format::nvfp4_block_scale(amax, c.S, kMode) (see the file comment).
template <QuantNumerics kMode>
__device__ __forceinline__ format::BlockScale nvfp4_block_scale_dev(float amax, const Nvfp4ScaleConst<kMode>& c) {
  format::BlockScale r;
  if constexpr (kMode == QuantNumerics::kFast) {
    const float sf_value = format::mul_ftz(c.S, format::mul_ftz(amax, c.a));
    r.sf = uint8_t(e4m3_encode_hw(sf_value));
    const float sfq = e4m3_decode_hw(r.sf);
    r.factor = (amax != 0.0f) ? format::rcp_approx_ftz(format::mul_ftz(sfq, c.b)) : 0.0f;
  } else if constexpr (kMode == QuantNumerics::kExact) {
    r.sf = uint8_t(nvfp4_exact_scale_byte_dev(amax, c.a));
    const float factor = nvfp4_exact_factor_dev(e4m3_decode_hw(r.sf), c.b);  // unconditionally: no branch
    r.factor = (amax != 0.0f) ? factor : 0.0f;
  } else {
    float s = format::div_rn(amax, c.a);
    if (s == 0.0f) s = 1.0f;
    r.sf = uint8_t(e4m3_encode_hw(s));
    r.factor = format::mul_rn(e4m3_decode_hw(r.sf), c.S);
  }
  return r;
}

}  // namespace fp4kit::quant
