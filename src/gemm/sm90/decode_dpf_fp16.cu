// Decode-family dp kernels with A in B-fragment order: operand and output __half.
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template DecodeKernelFn decode_dpf_kernel_for<__half, __half>(int, int, int, bool, bool);
}  // namespace fp4kit::gemm_impl::sm90
