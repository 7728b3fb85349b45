// Large-M family instantiations: operand __half, two stages per consumer step (kStep = 2) on the
// 128-row small token tiles, rings of 8 and 12 stages (wgmma_kernel.cuh; FP4KIT_WGMMA_PAIR_CONFIGS). wgmma N = 24 and 48 come
// from CuTe's extended GMMA table (gmma_rs_ext.cuh).
#include "gemm/sm90/wgmma_launch.cuh"

#include "gemm/sm90/gmma_rs_ext.cuh"

namespace fp4kit::gemm_impl::sm90 {
template WgmmaKernel wgmma_kernel_instance<__half, 128, 24, 8, 2>();
template WgmmaKernel wgmma_kernel_instance<__half, 128, 32, 8, 2>();
template WgmmaKernel wgmma_kernel_instance<__half, 128, 48, 8, 2>();
template WgmmaKernel wgmma_kernel_instance<__half, 128, 64, 8, 2>();
template WgmmaKernel wgmma_kernel_instance<__half, 128, 24, 12, 2>();
template WgmmaKernel wgmma_kernel_instance<__half, 128, 32, 12, 2>();
template WgmmaKernel wgmma_kernel_instance<__half, 128, 48, 12, 2>();
template WgmmaKernel wgmma_kernel_instance<__half, 128, 64, 12, 2>();
}  // namespace fp4kit::gemm_impl::sm90
