// Two FP32 values narrowed (round to nearest even) to one packed 16-bit pair, `lo` in the low half:
// the layout of an mma / wgmma fragment register and of two consecutive elements in memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "format/e2m1x8.h"
#include "format/e4m3.h"

namespace fp4kit::gemm_impl::sm90 {

template <typename OutT>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  static_assert(std::is_same_v<OutT, __nv_bfloat16> || std::is_same_v<OutT, __half>, "bf16 or fp16");
  if constexpr (std::is_same_v<OutT, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// The packed product of two pairs (HMUL2, round to nearest even).
template <typename OutT>
__device__ __forceinline__ uint32_t mul_pair(uint32_t a, uint32_t b) {
  if constexpr (std::is_same_v<OutT, __nv_bfloat16>) {
    const __nv_bfloat162 r = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&a), *reinterpret_cast<const __nv_bfloat162*>(&b));
    return *reinterpret_cast<const uint32_t*>(&r);
  } else {
    const __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));
    return *reinterpret_cast<const uint32_t*>(&r);
  }
}

// Eight E2M1 codes of w (element i in bits 4i..4i+3) times a block scale, as four packed pairs
// (element 2j in the low half of word j): the codes' exact values by byte permutes
// (format/e2m1x8.h), then one HMUL2 each with s2 = pack_pair<OutT>(sf, sf). Exact: an E2M1 value
// times an E4M3 scale has at most 6 significant bits and fits the range of BF16 and FP16
// (docs/GEMM.md), and every E4M3 scale is representable; ~20 instructions for the eight values
// instead of ~36 per pair for a float decode and a narrowing.
template <typename OutT>
__device__ __forceinline__ void decode_e2m1x8(uint32_t w, uint32_t (&out)[4]) {
  if constexpr (std::is_same_v<OutT, __nv_bfloat16>) format::e2m1x8_to_bf16x2(w, out);
  else format::e2m1x8_to_f16x2(w, out);
}
template <typename OutT>
__device__ __forceinline__ void decode_nvfp4x8(uint32_t w, uint32_t s2, uint32_t (&out)[4]) {
  decode_e2m1x8<OutT>(w, out);
#pragma unroll
  for (int j = 0; j < 4; ++j) out[j] = mul_pair<OutT>(out[j], s2);
}

// 16 E2M1 codes (element i in bits 4i..4i+3 of the 8 bytes) times their block's E4M3 scale byte,
// stored exactly as 16 consecutive 16-bit values (two 16-byte stores; dst 16-byte aligned): W4A4's
// in-kernel staging of A and the MoE's NVFP4-input gathers.
template <typename OutT>
__device__ __forceinline__ void store_nvfp4x16(uint2 codes, uint8_t sf_byte, void* dst) {
  const float sf = format::e4m3_to_float(sf_byte);
  const uint32_t s2 = pack_pair<OutT>(sf, sf);
  uint32_t lo[4], hi[4];
  decode_nvfp4x8<OutT>(codes.x, s2, lo);
  decode_nvfp4x8<OutT>(codes.y, s2, hi);
  uint4* d = static_cast<uint4*>(dst);
  d[0] = make_uint4(lo[0], lo[1], lo[2], lo[3]);
  d[1] = make_uint4(hi[0], hi[1], hi[2], hi[3]);
}

}  // namespace fp4kit::gemm_impl::sm90
