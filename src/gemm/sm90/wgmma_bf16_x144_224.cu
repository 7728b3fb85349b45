// Large-M family instantiations: operand __nv_bfloat16, 128 weight rows x 144 / 160 / 192 / 224 tokens: M =
// 129..224 without the tensor-core work of a 256-token tile (docs/GEMM.md "Token tiles that fit M").
// wgmma N = 144 / 160 / 224 come from CuTe's extended GMMA table, included only here (and in
// grouped_wgmma_144_160.cu); N = 192 from the main table.
#include "gemm/sm90/wgmma_launch.cuh"

#include <cute/arch/mma_sm90_gmma_ext.hpp>

namespace fp4kit::gemm_impl::sm90 {
FP4KIT_GMMA_RS(__nv_bfloat16, 144, MMA_64x144x16_F32BF16BF16_RS)
FP4KIT_GMMA_RS(__nv_bfloat16, 160, MMA_64x160x16_F32BF16BF16_RS)
FP4KIT_GMMA_RS(__nv_bfloat16, 224, MMA_64x224x16_F32BF16BF16_RS)
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 128, 144, 4>();
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 128, 160, 4>();
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 128, 192, 4>();
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 128, 224, 4>();
}  // namespace fp4kit::gemm_impl::sm90
