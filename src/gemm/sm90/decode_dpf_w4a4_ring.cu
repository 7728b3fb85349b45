// W4A4 fragment-order tiles on the NVFP4 ring (BF16 operands): output __nv_bfloat16.
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template DecodeKernelFn decode_dpf_w4a4_ring_kernel_for<__nv_bfloat16>(int, int, int, bool);
}  // namespace fp4kit::gemm_impl::sm90
