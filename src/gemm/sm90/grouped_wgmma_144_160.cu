// Grouped large-M instantiations with token tiles of 144 and 160 (gemm/grouped.h): MoE groups of
// ~128 +- 11 rows fit one tile instead of 1.5 tiles of 128. wgmma N = 144 / 160 comes from CuTe's
// extended GMMA table, included only here (it is large).
#include "gemm/sm90/wgmma_launch.cuh"

#include "gemm/sm90/gmma_rs_ext.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel grouped_wgmma_kernel_instance<__nv_bfloat16, 128, 144, 6>();
template WgmmaKernel grouped_wgmma_kernel_instance<__nv_bfloat16, 128, 160, 6>();
template WgmmaKernel grouped_wgmma_kernel_instance<__half, 128, 144, 6>();
template WgmmaKernel grouped_wgmma_kernel_instance<__half, 128, 160, 6>();
}  // namespace fp4kit::gemm_impl::sm90
