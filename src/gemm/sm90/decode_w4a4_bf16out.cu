// Decode-family instantiations: operand __nv_bfloat16, output __nv_bfloat16, W4A4=true.
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template DecodeKernelFn decode_kernel_for<__nv_bfloat16, __nv_bfloat16, true>(int, int, int);
}  // namespace fp4kit::gemm_impl::sm90
