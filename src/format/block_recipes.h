// Per-block quantization recipes (NVFP4_SPEC.md §2.3, §2.4, §2.5, §2.7 and ModelOpt's export),
// written once and used by the CPU reference and by the GPU kernels, so that the two can only
// differ where the documented rcp.approx emulation differs (kFast).
//
// A block is 16 (NVFP4) or 32 (MX) consecutive elements of one row along K. `amax` is the maximum
// of |x| over the block, NaNs ignored (fmaxf semantics), taken exactly (16-bit inputs convert to
// FP32 exactly).
#pragma once

#include "fp4kit/types.h"
#include "format/e2m1.h"
#include "format/e4m3.h"
#include "format/fp32_ops.h"
#include "format/ue8m0.h"

namespace fp4kit::format {

// The outcome for one block: the scale byte and the factor each element is multiplied by
// (for kModelOpt: the divisor each element is divided by).
struct BlockScale {
  uint8_t sf;
  float factor;
};

// NVFP4 block scale. `S` is the per-tensor (or per-row) global scale: the encode scale
// gs = 2688/amax_tensor for kExact/kFast, the decode scale ws2 = amax_tensor/2688 for kModelOpt.
FP4KIT_HD BlockScale nvfp4_block_scale(float amax, float S, QuantNumerics mode) {
  constexpr float kFltMax = 3.402823466e+38f;
  BlockScale r;
  if (mode == QuantNumerics::kFast) {
    // SFValue = S * (vecMax * rcp(6)); outputScale = rcp(SFq * rcp(S)), both FTZ (spec §2.11).
    const float sf_value = mul_ftz(S, mul_ftz(amax, rcp_approx_ftz(6.0f)));
    r.sf = float_to_e4m3(sf_value);
    const float sfq = e4m3_to_float(r.sf);
    r.factor = (amax != 0.0f) ? rcp_approx_ftz(mul_ftz(sfq, rcp_approx_ftz(S))) : 0.0f;
  } else if (mode == QuantNumerics::kExact) {
    // SFValue = vecMax * (S * (1/6)); outputScale = min(1 / (SFq * (1/S)), FLT_MAX) (spec §2.4).
    const float sf_value = (amax != 0.0f) ? mul_rn(amax, mul_rn(S, 1.0f / 6.0f)) : 0.0f;
    r.sf = float_to_e4m3(sf_value);
    const float sfq = e4m3_to_float(r.sf);
    const float inv = div_rn(1.0f, mul_rn(sfq, div_rn(1.0f, S)));
    r.factor = (amax != 0.0f) ? (inv < kFltMax ? inv : kFltMax) : 0.0f;
  } else {
    // ModelOpt: s = amax / (6 * ws2), 1.0 where that is 0; sf = E4M3(s); divisor = float(sf) * ws2.
    float s = div_rn(amax, mul_rn(6.0f, S));
    if (s == 0.0f) s = 1.0f;
    r.sf = float_to_e4m3(s);
    r.factor = mul_rn(e4m3_to_float(r.sf), S);
  }
  return r;
}

// One element of an NVFP4 block -> 4-bit code, given the block's BlockScale.
FP4KIT_HD uint32_t nvfp4_encode_element(float x, const BlockScale& bs, QuantNumerics mode) {
  if (mode == QuantNumerics::kFast) return float_to_e2m1(mul_ftz(x, bs.factor));
  if (mode == QuantNumerics::kExact) return float_to_e2m1(mul_rn(x, bs.factor));
  return float_to_e2m1_modelopt(div_rn(x, bs.factor));
}

// MXFP4 (block 32): v = amax / 6 (rcp.approx(6) in kFast, the FP32 constant 1/6 otherwise);
// sf = UE8M0 rounded up; factor = 2^(127 - sf) (1 where sf == 0, 0 for a zero block).
FP4KIT_HD BlockScale mxfp4_block_scale(float amax, QuantNumerics mode) {
  const bool fast = mode == QuantNumerics::kFast;
  const float v = fast ? mul_ftz(amax, rcp_approx_ftz(6.0f)) : mul_rn(amax, 1.0f / 6.0f);
  BlockScale r;
  r.sf = float_to_ue8m0_ceil(v);
  r.factor = (v != 0.0f) ? ue8m0_reciprocal(r.sf, fast) : 0.0f;
  return r;
}

FP4KIT_HD uint32_t mxfp4_encode_element(float x, const BlockScale& bs, QuantNumerics mode) {
  return float_to_e2m1(mode == QuantNumerics::kFast ? mul_ftz(x, bs.factor) : mul_rn(x, bs.factor));
}

// MXFP8 (block 32): v = amax / 448; sf = UE8M0 rounded up; factor = 1/float(sf) (0 if that is 0);
// elements clamp(x * factor, ±448) -> E4M3 RNE.
FP4KIT_HD BlockScale mxfp8_block_scale(float amax, QuantNumerics mode) {
  const bool fast = mode == QuantNumerics::kFast;
  const float v = fast ? mul_ftz(amax, rcp_approx_ftz(448.0f)) : mul_rn(amax, 1.0f / 448.0f);
  BlockScale r;
  r.sf = float_to_ue8m0_ceil(v);
  const float sfq = ue8m0_to_float(r.sf);
  r.factor = (sfq != 0.0f) ? ue8m0_reciprocal(r.sf, fast) : 0.0f;
  return r;
}

FP4KIT_HD uint8_t mxfp8_encode_element(float x, const BlockScale& bs, QuantNumerics mode) {
  float y = mode == QuantNumerics::kFast ? mul_ftz(x, bs.factor) : mul_rn(x, bs.factor);
  y = y > 448.0f ? 448.0f : (y < -448.0f ? -448.0f : y);
  return float_to_e4m3(y);
}

}  // namespace fp4kit::format
