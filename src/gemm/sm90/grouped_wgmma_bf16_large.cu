// Grouped large-M instantiations (gemm/grouped.h): operand __nv_bfloat16, tiles 128x256 and 256x128.
#include "gemm/sm90/wgmma_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel grouped_wgmma_kernel_instance<__nv_bfloat16, 128, 256, 4>();
template WgmmaKernel grouped_wgmma_kernel_instance<__nv_bfloat16, 256, 128, 4>();
}  // namespace fp4kit::gemm_impl::sm90
