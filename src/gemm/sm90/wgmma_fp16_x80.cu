// Large-M family instantiations: operand __half, token tile 80 (128x80, 256x80): M up to 80
// without the tensor-core work of a 128-token tile (docs/GEMM.md "Token tiles that fit M"). wgmma
// N = 80 comes from CuTe's extended GMMA table (gmma_rs_ext.cuh).
#include "gemm/sm90/wgmma_launch.cuh"

#include "gemm/sm90/gmma_rs_ext.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel wgmma_kernel_instance<__half, 128, 80, 6>();
template WgmmaKernel wgmma_kernel_instance<__half, 256, 80, 6>();
}  // namespace fp4kit::gemm_impl::sm90
