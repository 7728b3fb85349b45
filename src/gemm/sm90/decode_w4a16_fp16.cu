// Decode-family instantiations: operand __half, output __half, W4A4=false.
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl::sm90 {
template cudaError_t launch_decode<__half, __half, false>(int, int, const DecodeGemmArgs&, dim3, cudaStream_t);
}  // namespace fp4kit::gemm_impl::sm90
