// W4A4 runs the W4A16 kernels on activations decoded once, exactly, into the workspace: every
// E2M1 x E4M3 product fits BF16 and FP16, so the GEMM sees the same values either way. Shared by
// both kernel families.
#pragma once

#include <cstddef>

#include "fp4kit/gemm.h"

namespace fp4kit::gemm_impl {

// The 16-bit type the kernels multiply in (W4A4: the output's type).
inline DType operand_type(const GemmParams& p) { return p.a_dtype == DType::kE2M1x2 ? p.d_dtype : p.a_dtype; }

// Workspace bytes the staged activations take (0 unless W4A4), a multiple of 256.
inline size_t staged_a_bytes(const GemmParams& p) {
  return p.a_dtype == DType::kE2M1x2 ? (size_t(p.m) * size_t(p.k) * 2 + 255) / 256 * 256 : 0;
}

// NVFP4 A [rows, k] (codes `lda` elements apart, 128x4 scales over `rows` rows, no global scale)
// decoded exactly into `out`, [rows, k] of the 16-bit `dtype` (`out_bytes` of room).
Status stage_nvfp4_operand(const void* codes, const uint8_t* scales, int64_t rows, int64_t k, int64_t lda, DType dtype,
                           void* out, int64_t out_bytes, bool pdl, cudaStream_t stream);

// For W4A4: decodes A (codes + 128x4 scales, no global scale) into `workspace` and rewrites `p` to
// the equivalent W4A16 problem. Otherwise does nothing.
Status stage_activations(GemmParams& p, void* workspace, cudaStream_t stream);

}  // namespace fp4kit::gemm_impl
