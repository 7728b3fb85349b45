// Large-M family instantiations: operand __half, token tile 24 (128x24, 256x24): M up to 24
// without the tensor-core work of a 32-token tile (docs/GEMM.md "Token tiles that fit M"). wgmma
// N = 24 comes from CuTe's extended GMMA table, included only here.
#include "gemm/sm90/wgmma_launch.cuh"

#include <cute/arch/mma_sm90_gmma_ext.hpp>

namespace fp4kit::gemm_impl::sm90 {
FP4KIT_GMMA_RS(__half, 24, MMA_64x24x16_F32F16F16_RS)
template WgmmaKernel wgmma_kernel_instance<__half, 128, 24, 8>();
template WgmmaKernel wgmma_kernel_instance<__half, 256, 24, 8>();
}  // namespace fp4kit::gemm_impl::sm90
