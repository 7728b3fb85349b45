// Large-M family instantiations: operand __half, token tile 112 (128x112, 256x112): M up to 112
// without the tensor-core work of a 128-token tile (docs/GEMM.md "Token tiles that fit M"). wgmma
// N = 112 comes from CuTe's extended GMMA table (gmma_rs_ext.cuh).
#include "gemm/sm90/wgmma_launch.cuh"

#include "gemm/sm90/gmma_rs_ext.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel wgmma_kernel_instance<__half, 128, 112, 6>();
template WgmmaKernel wgmma_kernel_instance<__half, 256, 112, 6>();
}  // namespace fp4kit::gemm_impl::sm90
