// Decode-family instantiations: operand __half, output __half, W4A4=false.
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template DecodeKernelFn decode_kernel_for<__half, __half, false>(int, int, int);
}  // namespace fp4kit::gemm_impl::sm90
