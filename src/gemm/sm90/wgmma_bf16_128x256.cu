// Large-M family instantiations: operand __nv_bfloat16, tile 128x256.
#include "gemm/sm90/wgmma_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel wgmma_kernel_instance<__nv_bfloat16, 128, 256, 4>();
}  // namespace fp4kit::gemm_impl::sm90
