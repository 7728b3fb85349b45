// Large-M family instantiations: operand __nv_bfloat16, tile 256x64.
#include "gemm/sm90/wgmma_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 256, 64, 8>();
}  // namespace fp4kit::gemm_impl::sm90
