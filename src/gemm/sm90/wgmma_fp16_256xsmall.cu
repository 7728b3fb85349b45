// Large-M family instantiations: operand __half, small token tiles 256x16 and 256x32 (decode-sized M).
#include "gemm/sm90/wgmma_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel wgmma_kernel_instance<__half, 256, 16, 8>();
template WgmmaKernel wgmma_kernel_instance<__half, 256, 32, 8>();
}  // namespace fp4kit::gemm_impl::sm90
