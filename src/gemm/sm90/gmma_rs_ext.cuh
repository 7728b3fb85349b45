// The wgmma token widths that come from CuTe's extended GMMA table (large: include it only in the
// translation units that instantiate these widths): N = 24, 48, 80, 112, 144, 160, 224, BF16 and FP16.
// The widths of the main table are in wgmma_kernel.cuh.
#pragma once

#include <cute/arch/mma_sm90_gmma_ext.hpp>

#include "gemm/sm90/wgmma_kernel.cuh"

namespace fp4kit::gemm_impl::sm90 {
#define FP4KIT_GMMA_RS_EXT(N)                                            \
  FP4KIT_GMMA_RS(__nv_bfloat16, N, MMA_64x##N##x16_F32BF16BF16_RS) \
  FP4KIT_GMMA_RS(__half, N, MMA_64x##N##x16_F32F16F16_RS)
FP4KIT_GMMA_RS_EXT(24)
FP4KIT_GMMA_RS_EXT(48)
FP4KIT_GMMA_RS_EXT(80)
FP4KIT_GMMA_RS_EXT(112)
FP4KIT_GMMA_RS_EXT(144)
FP4KIT_GMMA_RS_EXT(160)
FP4KIT_GMMA_RS_EXT(224)
#undef FP4KIT_GMMA_RS_EXT
}  // namespace fp4kit::gemm_impl::sm90
