// Large-M family instantiations: operand __half, token tile 96 (128x96, 256x96): M = 81..96
// without the tensor-core work of a 128-token tile (docs/GEMM.md "Token tiles that fit M").
#include "gemm/sm90/wgmma_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel wgmma_kernel_instance<__half, 128, 96, 6>();
template WgmmaKernel wgmma_kernel_instance<__half, 256, 96, 6>();
}  // namespace fp4kit::gemm_impl::sm90
