// Large-M family instantiations: operand __half, token tile 24 (128x24, 256x24): M up to 24
// without the tensor-core work of a 32-token tile (docs/GEMM.md "Token tiles that fit M"). wgmma
// N = 24 comes from CuTe's extended GMMA table (gmma_rs_ext.cuh).
#include "gemm/sm90/wgmma_launch.cuh"

#include "gemm/sm90/gmma_rs_ext.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel wgmma_kernel_instance<__half, 128, 24, 8>();
template WgmmaKernel wgmma_kernel_instance<__half, 256, 24, 8>();
}  // namespace fp4kit::gemm_impl::sm90
