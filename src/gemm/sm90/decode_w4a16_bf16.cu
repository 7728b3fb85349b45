// Decode-family instantiations: operand and output __nv_bfloat16.
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template DecodeKernelFn decode_kernel_for<__nv_bfloat16, __nv_bfloat16>(int, int, int);
template DecodeKernelFn decode_dp_kernel_for<__nv_bfloat16, __nv_bfloat16, false>(int, int, int, bool);
template DecodeKernelFn decode_dp_stage_kernel_for<__nv_bfloat16>(int, int, int, bool);
}  // namespace fp4kit::gemm_impl::sm90
