// Grouped large-M instantiations (gemm/grouped.h): operand __nv_bfloat16, tiles 128x64 and 128x128.
#include "gemm/sm90/wgmma_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel grouped_wgmma_kernel_instance<__nv_bfloat16, 128, 64, 6>();
template WgmmaKernel grouped_wgmma_kernel_instance<__nv_bfloat16, 128, 128, 4>();
}  // namespace fp4kit::gemm_impl::sm90
