// Decode-family dp kernels with A in B-fragment order: operand and output __nv_bfloat16.
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template DecodeKernelFn decode_dpf_kernel_for<__nv_bfloat16, __nv_bfloat16>(int, int, int, bool, bool);
}  // namespace fp4kit::gemm_impl::sm90
