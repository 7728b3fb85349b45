// Two FP32 values narrowed (round to nearest even) to one packed 16-bit pair, `lo` in the low half:
// the layout of an mma / wgmma fragment register and of two consecutive elements in memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

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

}  // namespace fp4kit::gemm_impl::sm90
