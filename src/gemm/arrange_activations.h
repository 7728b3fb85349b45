// Writes the activations of a GEMM into B-fragment order (fragment_activations.h) for the dp
// decode kernels with 9..16 tokens: W4A16 copies the 16-bit A, W4A4 decodes NVFP4 A (E2M1 codes,
// E4M3 128x4 scales, no global scale) exactly into the operand type, as stage_activations does,
// so one kernel replaces the staging and the arrangement.
#pragma once

#include <cuda_runtime.h>

#include "fp4kit/gemm.h"

namespace fp4kit::gemm_impl {

// `out`: fragment_activation_shape(p.m, p.k).bytes() bytes, 16-byte aligned. p is validated by
// gemm(). The kernel honours p.enable_pdl (it waits for the previous kernel before reading A) and
// always lets the next kernel launch at once (the GEMM after it waits for it).
Status arrange_activations(const GemmParams& p, void* out, cudaStream_t stream);

}  // namespace fp4kit::gemm_impl
