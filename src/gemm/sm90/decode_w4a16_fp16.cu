// Decode-family instantiations: operand and output __half.
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template DecodeKernelFn decode_kernel_for<__half, __half>(int, int, int);
template DecodeKernelFn decode_dp_kernel_for<__half, __half, false>(int, int, int, bool);
template DecodeKernelFn decode_dp_stage_kernel_for<__half>(int, int, int, bool);
}  // namespace fp4kit::gemm_impl::sm90
