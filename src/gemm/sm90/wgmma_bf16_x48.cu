// Large-M family instantiations: operand __nv_bfloat16, token tile 48 (128x48, 256x48): M = 33..48
// without the tensor-core work of a 64-token tile (docs/GEMM.md "Token tiles that fit M").
#include "gemm/sm90/wgmma_launch.cuh"

#include "gemm/sm90/gmma_rs_ext.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 128, 48, 8>();
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 256, 48, 8>();
}  // namespace fp4kit::gemm_impl::sm90
