// bench/gemm_bench_support.h — device helpers of the GEMM benchmark that bench_util does not offer:
// per-tensor FP8 E4M3 quantization (the cuBLASLt FP8 baseline's operands), E4M3 -> BF16 decoding (its
// reference), and the relative error of a BF16 output with a check that every element was written.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fp4kit/status.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::bench {

// Per-tensor FP8 E4M3 quantization of BF16 data: amax over the tensor, decode scale s = amax / 448
// (1 when amax is 0), e4m3 = satfinite(x / s). Writes s to *decode_scale (device float, 16-byte
// aligned for cuBLASLt). `amax_scratch` is one device float. Asynchronous.
Status quantize_fp8_per_tensor(const void* src_bf16, int64_t count, void* dst_e4m3, float* decode_scale,
                               float* amax_scratch, cudaStream_t stream);

// E4M3 -> BF16, without scale (exact: every finite E4M3 value is a BF16 value). Asynchronous.
Status e4m3_to_bf16(const void* src_e4m3, int64_t count, void* dst_bf16, cudaStream_t stream);

// Relative Frobenius error of `out` against `ref` (both BF16 [count]), accumulated in double, and the
// number of non-finite elements (an output poisoned with 0xFF bytes beforehand reads NaN where the
// kernel did not write it).
struct RelErrResult {
  double rel_fro = 0.0;        // ||out - ref||_F / ||ref||_F; NaN when any element is non-finite
  double ref_norm = 0.0;       // ||ref||_F
  int64_t nonfinite = 0;       // non-finite elements of out
  int64_t ref_nonfinite = 0;   // non-finite elements of ref
};
size_t rel_err_scratch_bytes();
// `scratch`: device, rel_err_scratch_bytes(). Synchronizes `stream`.
Status relative_error_bf16(const void* out, const void* ref, int64_t count, void* scratch, cudaStream_t stream,
                           RelErrResult* result);

}  // namespace fp4kit::bench
