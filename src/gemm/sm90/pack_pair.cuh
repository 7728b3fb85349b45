// Two FP32 values narrowed (round to nearest even) to one packed 16-bit pair, `lo` in the low half:
// the layout of an mma / wgmma fragment register and of two consecutive elements in memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "format/e2m1.h"

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

// An NVFP4 byte (two E2M1 codes, the even element in the low nibble) times its block's E4M3 scale
// `sf`, as one packed pair. Exact: an E2M1 value times an E4M3 scale has at most 6 significant bits
// and fits the range of BF16 and FP16 (docs/GEMM.md), so the narrowing never rounds.
template <typename OutT>
__device__ __forceinline__ uint32_t decode_nvfp4_pair(uint8_t byte, float sf) {
  return pack_pair<OutT>(format::e2m1_to_float(format::e2m1_low(byte)) * sf,
                         format::e2m1_to_float(format::e2m1_high(byte)) * sf);
}

}  // namespace fp4kit::gemm_impl::sm90
