// Grouped decode-family instantiations (gemm/grouped.h): operand and output __half.
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template DecodeKernelFn grouped_decode_kernel_for<__half>(int, int, int);
template DecodeKernelFn decode_dp_kernel_for<__half, __half, true>(int, int, int, bool);
template DecodeKernelFn decode_dp_ready_kernel_for<__half>(int, int, int);
template DecodeKernelFn decode_dp_balanced_kernel_for<__half>(int, int, int);
}  // namespace fp4kit::gemm_impl::sm90
