// Instantiation and launch of the decode family. Each (operand type, output type, W4A4) triple is
// instantiated in its own translation unit (decode_*.cu) to keep compile times parallel.
#pragma once

#include <cuda_runtime.h>

#include "gemm/sm90/decode_kernel.cuh"

namespace fp4kit::gemm_impl::sm90 {

constexpr int kDecodeWarps = 8;

template <typename T, typename OutT, bool W4A4>
cudaError_t launch_decode(int nt, int u, const DecodeGemmArgs& args, dim3 grid, cudaStream_t stream) {
  const dim3 block(kDecodeWarps * 32);
#define FP4KIT_DECODE_CASE(NT, U)                                                           \
  if (nt == NT && u == U) {                                                                 \
    decode_gemm_kernel<T, OutT, NT, kDecodeWarps, U, W4A4><<<grid, block, 0, stream>>>(args); \
    return cudaGetLastError();                                                              \
  }
  FP4KIT_DECODE_CASE(1, 2)
  FP4KIT_DECODE_CASE(1, 4)
  FP4KIT_DECODE_CASE(2, 2)
  FP4KIT_DECODE_CASE(2, 4)
  FP4KIT_DECODE_CASE(4, 2)
  FP4KIT_DECODE_CASE(4, 4)
#undef FP4KIT_DECODE_CASE
  return cudaErrorInvalidConfiguration;
}

}  // namespace fp4kit::gemm_impl::sm90
