// Quantization of one "item" (16 consecutive elements of a row) to NVFP4 / MXFP4 / MXFP8, shared by
// the vectorized and the TMA kernel. The block math is format/block_recipes.h (the CPU reference
// calls the same functions); elements are encoded by the fast encoders whose equivalence to the
// reference encoders is proven in tests/quant (e2m1_fast_test.cpp, e4m3 hardware test).
//
// NVFP4: one item = one block of 16. MX (block 32): the two items of a block sit in lanes 2i and
// 2i+1 of a warp and combine their amax with one shuffle; every lane of the warp must call
// quantize_item (valid or not) because of that shuffle.
//
// Fast path and reference path: the fast encoders require a finite factor >= 0, no NaN in the
// block and no 0 * Inf (factor_is_fast). The block amax is taken NaN-propagating (one max.NaN per element); a block with a NaN, a
// non-finite or negative factor, and every kModelOpt block (per-element division) take the
// reference path: format::*_encode_element, exactly what the CPU reference runs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cfloat>
#include <cstdint>

#include "fp4kit/types.h"
#include "format/block_recipes.h"
#include "quant/e2m1_fast.h"
#include "quant/nvfp4_scale_dev.cuh"
#include "quant/quant_common.cuh"

namespace fp4kit::quant {

// Where an item's results go.
struct ItemOutputs {
  uint8_t* elements;         // packed codes (FP4) or E4M3 bytes (MXFP8), rows contiguous
  int64_t element_row_bytes;  // cols/2 (FP4) or cols (MXFP8)
  uint8_t* scales;
  ScaleGeometry sg;
  const float* global_scale;  // NVFP4 only
  bool per_row_global_scale;
};

__device__ __forceinline__ float fmax_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// max |x_i| NaN-propagating (NaN iff some x_i is NaN).
__device__ __forceinline__ float item_amax_nan(const float (&x)[16]) {
  float m = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) m = fmax_nan(m, fabsf(x[i]));
  return m;
}

// The same from the raw words of an item: for BF16/FP16 with packed abs + max.NaN (VHMNMX takes
// two words per instruction); the maximum of 16-bit values converts to FP32 exactly.
template <DType kIn>
__device__ __forceinline__ float item_amax_nan_raw(const uint32_t (&w)[InputType<kIn>::kWords], const float (&x)[16]) {
  if constexpr (kIn == DType::kFP32) {
    return item_amax_nan(x);
  } else if constexpr (kIn == DType::kBF16) {
    __nv_bfloat162 m = __habs2(*reinterpret_cast<const __nv_bfloat162*>(&w[0]));
#pragma unroll
    for (int i = 1; i < 8; ++i) m = __hmax2_nan(m, __habs2(*reinterpret_cast<const __nv_bfloat162*>(&w[i])));
    return fmax_nan(__low2float(m), __high2float(m));
  } else {
    __half2 m = __habs2(*reinterpret_cast<const __half2*>(&w[0]));
#pragma unroll
    for (int i = 1; i < 8; ++i) m = __hmax2_nan(m, __habs2(*reinterpret_cast<const __half2*>(&w[i])));
    return fmax_nan(__low2float(m), __high2float(m));
  }
}

// max |x_i| with NaNs ignored, from +0: the reference's block_amax.
__device__ __forceinline__ float item_amax_ignore_nan(const float (&x)[16]) {
  float m = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) m = format::fmax_nan_ignoring(m, format::abs_f(x[i]));
  return m;
}

// The fast encoders' precondition for a block with NaN-free amax `amax` (max |x|): y = x * f is
// never NaN and sign(y) = sign(x). That holds for a finite f >= 0 unless f is (or, under FTZ,
// flushes to) zero while the block holds an infinity (0 * Inf).
template <bool kFtz>
__device__ __forceinline__ bool factor_is_fast(float f, float amax) {
  const bool f_nonzero = kFtz ? f >= FLT_MIN : f > 0.0f;
  return f >= 0.0f && f <= FLT_MAX && (amax <= FLT_MAX || f_nonzero);
}

// Packs the reference codes of 8 elements (element i -> nibble i).
template <class Enc>
__device__ __forceinline__ uint32_t pack8_reference(const float* x, Enc enc) {
  uint32_t w = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) w |= (enc(x[i]) & 15u) << (4 * i);
  return w;
}

template <bool kFtz>
__device__ __forceinline__ void encode16_e2m1_fast(const float (&x)[16], float f, uint32_t& w0, uint32_t& w1) {
  float lo[8], hi[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    lo[i] = x[i];
    hi[i] = x[8 + i];
  }
  w0 = e2m1x8_encode_fast<kFtz>(lo, f);
  w1 = e2m1x8_encode_fast<kFtz>(hi, f);
}

// E4M3 pair by the hardware (RNE, satfinite): equal to format::float_to_e4m3 for non-NaN inputs
// (proven on the GPU by tests/quant). Byte 0 = a, byte 1 = b.
__device__ __forceinline__ uint32_t e4m3x2(float a, float b) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(b), "f"(a));
  return r;
}

__device__ __forceinline__ void store_codes8(uint8_t* p, uint32_t w0, uint32_t w1, bool vec) {
  if (vec) {
    st_global_v2(p, w0, w1);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      st_u8(p + i, (w0 >> (8 * i)) & 0xffu);
      st_u8(p + 4 + i, (w1 >> (8 * i)) & 0xffu);
    }
  }
}

// ---- NVFP4: one block of 16 -> scale byte + two code words ------------------------------------------
template <QuantNumerics kMode>
__device__ __forceinline__ uint32_t nvfp4_block(const float (&x)[16], float amax_nan, const Nvfp4ScaleConst<kMode>& c,
                                                uint32_t& w0, uint32_t& w1) {
  const float amax = __builtin_expect(amax_nan != amax_nan, 0) ? item_amax_ignore_nan(x) : amax_nan;
  const format::BlockScale bs = nvfp4_block_scale_dev<kMode>(amax, c);
  if (kMode != QuantNumerics::kModelOpt && amax_nan == amax_nan &&
      factor_is_fast<kMode == QuantNumerics::kFast>(bs.factor, amax_nan)) {
    encode16_e2m1_fast<kMode == QuantNumerics::kFast>(x, bs.factor, w0, w1);
  } else {
    auto enc = [&](float v) { return format::nvfp4_encode_element(v, bs, kMode); };
    w0 = pack8_reference(x, enc);
    w1 = pack8_reference(x + 8, enc);
  }
  return bs.sf;
}

// The same when the caller already holds the block scale (and knows the block has no NaN or
// has handled it): fast encoder when its precondition holds, else the reference encoder.
template <QuantNumerics kMode>
__device__ __forceinline__ void nvfp4_encode(const float (&x)[16], const format::BlockScale& bs, float amax_nan,
                                             uint32_t& w0, uint32_t& w1) {
  if (kMode != QuantNumerics::kModelOpt && amax_nan == amax_nan &&
      factor_is_fast<kMode == QuantNumerics::kFast>(bs.factor, amax_nan)) {
    encode16_e2m1_fast<kMode == QuantNumerics::kFast>(x, bs.factor, w0, w1);
  } else {
    auto enc = [&](float v) { return format::nvfp4_encode_element(v, bs, kMode); };
    w0 = pack8_reference(x, enc);
    w1 = pack8_reference(x + 8, enc);
  }
}

// ---- MX: the scale of a 32-element block, then each half encoded with it ---------------------------
struct MxScale {
  format::BlockScale bs;
  bool fast;  // the fast encoders' precondition holds for the whole block
};

// amax: NaN-ignoring max of the block; amax_nan: NaN-propagating max of the block.
template <BlockFormat kFormat, QuantNumerics kMode>
__device__ __forceinline__ MxScale mx_scale(float amax, float amax_nan) {
  static_assert(kFormat == BlockFormat::kMXFP4 || kFormat == BlockFormat::kMXFP8);
  static_assert(kMode == QuantNumerics::kExact || kMode == QuantNumerics::kFast);
  MxScale m;
  m.bs = kFormat == BlockFormat::kMXFP4 ? format::mxfp4_block_scale(amax, kMode) : format::mxfp8_block_scale(amax, kMode);
  m.fast = amax_nan == amax_nan && factor_is_fast<kMode == QuantNumerics::kFast>(m.bs.factor, amax_nan);
  return m;
}

// 16 elements of an MX block -> w[0..1] (MXFP4 codes) or w[0..3] (MXFP8 bytes).
template <BlockFormat kFormat, QuantNumerics kMode>
__device__ __forceinline__ void mx_encode_half(const float (&x)[16], const MxScale& m, uint32_t (&w)[4]) {
  constexpr bool kFtz = kMode == QuantNumerics::kFast;
  if constexpr (kFormat == BlockFormat::kMXFP4) {
    if (m.fast) {
      encode16_e2m1_fast<kFtz>(x, m.bs.factor, w[0], w[1]);
    } else {
      auto enc = [&](float v) { return format::mxfp4_encode_element(v, m.bs, kMode); };
      w[0] = pack8_reference(x, enc);
      w[1] = pack8_reference(x + 8, enc);
    }
    w[2] = w[3] = 0;
  } else {
    if (m.fast) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float y[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float v = kFtz ? format::mul_ftz(x[4 * j + i], m.bs.factor) : __fmul_rn(x[4 * j + i], m.bs.factor);
          y[i] = fminf(fmaxf(v, -448.0f), 448.0f);
        }
        w[j] = e4m3x2(y[0], y[1]) | (e4m3x2(y[2], y[3]) << 16);
      }
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        w[j] = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) w[j] |= uint32_t(format::mxfp8_encode_element(x[4 * j + i], m.bs, kMode)) << (8 * i);
      }
    }
  }
}

// ---- one item per thread (the TMA kernel) ----------------------------------------------------------
template <QuantNumerics kMode, bool kVecOut>
__device__ __forceinline__ void quantize_item_nvfp4(const float (&x)[16], float amax_nan, bool valid, int64_t row,
                                                    int64_t g, const Nvfp4ScaleConst<kMode>& c0,
                                                    const ItemOutputs& o) {
  Nvfp4ScaleConst<kMode> c = c0;
  if (o.per_row_global_scale) c = nvfp4_scale_const<kMode>(valid ? __ldg(o.global_scale + row) : 1.0f);
  uint32_t w0, w1;
  const uint32_t sf = nvfp4_block<kMode>(x, amax_nan, c, w0, w1);
  if (valid) {
    store_codes8(o.elements + row * o.element_row_bytes + g * 8, w0, w1, kVecOut);
    st_u8(o.scales + sf_offset(o.sg.layout, row, g, o.sg.padded_cols), sf);
  }
}

// MX block = items 2j and 2j+1 in lanes 2i and 2i+1: one shuffle per amax.
template <BlockFormat kFormat, QuantNumerics kMode, bool kVecOut>
__device__ __forceinline__ void quantize_item_mx(const float (&x)[16], float local_nan, bool valid, int64_t row,
                                                 int64_t g, const ItemOutputs& o) {
  const float local = __builtin_expect(local_nan != local_nan, 0) ? item_amax_ignore_nan(x) : local_nan;
  // max of NaN-ignoring maxima (both >= +0, never NaN) = the block's NaN-ignoring maximum.
  const float amax = fmaxf(local, __shfl_xor_sync(kFullMask, local, 1));
  const float amax_nan = fmax_nan(local_nan, __shfl_xor_sync(kFullMask, local_nan, 1));
  const MxScale m = mx_scale<kFormat, kMode>(amax, amax_nan);
  uint32_t w[4];
  mx_encode_half<kFormat, kMode>(x, m, w);
  if (valid) {
    if constexpr (kFormat == BlockFormat::kMXFP4) {
      store_codes8(o.elements + row * o.element_row_bytes + g * 8, w[0], w[1], kVecOut);
    } else {
      uint8_t* p = o.elements + row * o.element_row_bytes + g * 16;
      if (kVecOut) {
        st_global_v4(p, w[0], w[1], w[2], w[3]);
      } else {
#pragma unroll
        for (int i = 0; i < 16; ++i) st_u8(p + i, (w[i / 4] >> (8 * (i % 4))) & 0xffu);
      }
    }
    if ((g & 1) == 0) st_u8(o.scales + sf_offset(o.sg.layout, row, g >> 1, o.sg.padded_cols), m.bs.sf);
  }
}

// `amax_nan` = item_amax_nan(x), computed by the caller (the TMA kernel releases its shared-memory
// stage only after this reduction has consumed every loaded word).
template <BlockFormat kFormat, QuantNumerics kMode, bool kVecOut>
__device__ __forceinline__ void quantize_item(const float (&x)[16], float amax_nan, bool valid, int64_t row,
                                              int64_t g, const Nvfp4ScaleConst<kMode>& c0, const ItemOutputs& o) {
  if constexpr (kFormat == BlockFormat::kNVFP4) {
    quantize_item_nvfp4<kMode, kVecOut>(x, amax_nan, valid, row, g, c0, o);
  } else {
    quantize_item_mx<kFormat, kMode, kVecOut>(x, amax_nan, valid, row, g, o);
  }
}

}  // namespace fp4kit::quant
