// Large-M family instantiations: operand __nv_bfloat16, 128 weight rows x 144 / 160 / 192 / 224 tokens: M =
// 129..224 without the tensor-core work of a 256-token tile (docs/GEMM.md "Token tiles that fit M").
// wgmma N = 144 / 160 / 224 come from CuTe's extended GMMA table (gmma_rs_ext.cuh); N = 192 from
// the main table.
#include "gemm/sm90/wgmma_launch.cuh"

#include "gemm/sm90/gmma_rs_ext.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 128, 144, 4>();
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 128, 160, 4>();
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 128, 192, 4>();
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 128, 224, 4>();
}  // namespace fp4kit::gemm_impl::sm90
