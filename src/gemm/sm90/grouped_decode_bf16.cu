// Grouped decode-family instantiations (gemm/grouped.h): operand and output __nv_bfloat16.
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template DecodeKernelFn grouped_decode_kernel_for<__nv_bfloat16>(int, int, int);
template DecodeKernelFn decode_dp_kernel_for<__nv_bfloat16, __nv_bfloat16, true>(int, int, int, bool);
template DecodeKernelFn decode_dp_ready_kernel_for<__nv_bfloat16>(int, int, int);
template DecodeKernelFn decode_dp_balanced_kernel_for<__nv_bfloat16>(int, int, int);
}  // namespace fp4kit::gemm_impl::sm90
