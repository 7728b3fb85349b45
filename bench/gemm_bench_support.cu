// bench/gemm_bench_support.cu — see gemm_bench_support.h.
#include "gemm_bench_support.h"

#include "bench_util.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

namespace fp4kit::bench {

#define GB_CUDA(expr, what) FP4KIT_RETURN_IF_ERROR(::fp4kit::bench::cuda_result(int(expr), (what)))

// ---- kernels -----------------------------------------------------------------------------------------
namespace {

constexpr int kThreads = 256;

int grid_for(int64_t count, int per_thread = 1) {
  const int64_t blocks = (count + int64_t(kThreads) * per_thread - 1) / (int64_t(kThreads) * per_thread);
  return static_cast<int>(std::min<int64_t>(std::max<int64_t>(blocks, 1), 132 * 32));
}

__device__ inline void atomic_max_nonneg(float* addr, float v) {
  // Non-negative floats order like their bit patterns as signed ints.
  atomicMax(reinterpret_cast<int*>(addr), __float_as_int(v));
}

__global__ void amax_bf16_kernel(const __nv_bfloat16* src, int64_t count, float* amax) {
  float m = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = fabsf(__bfloat162float(src[i]));
    m = fmaxf(m, v);  // NaN is dropped by fmaxf
  }
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if ((threadIdx.x & 31) == 0) atomic_max_nonneg(amax, m);
}

__global__ void quantize_fp8_kernel(const __nv_bfloat16* src, int64_t count, const float* amax,
                                    __nv_fp8_e4m3* dst, float* decode_scale) {
  const float a = *amax;
  const float s = (a > 0.0f && isfinite(a)) ? a / 448.0f : 1.0f;
  const float inv = 1.0f / s;
  if (blockIdx.x == 0 && threadIdx.x == 0) *decode_scale = s;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = fminf(fmaxf(__bfloat162float(src[i]) * inv, -448.0f), 448.0f);
    dst[i] = __nv_fp8_e4m3(v);
  }
}

__global__ void e4m3_to_bf16_kernel(const __nv_fp8_e4m3* src, int64_t count, __nv_bfloat16* dst) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] = __float2bfloat16_rn(static_cast<float>(src[i]));
  }
}

struct ErrAccum {
  double diff2;
  double ref2;
  unsigned long long nonfinite;
  unsigned long long ref_nonfinite;
};

__global__ void rel_err_kernel(const __nv_bfloat16* out, const __nv_bfloat16* ref, int64_t count, ErrAccum* acc) {
  double d2 = 0.0, r2 = 0.0;
  unsigned long long bad = 0, ref_bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const float o = __bfloat162float(out[i]);
    const float r = __bfloat162float(ref[i]);
    if (!isfinite(o)) { ++bad; continue; }
    if (!isfinite(r)) { ++ref_bad; continue; }
    const double d = double(o) - double(r);
    d2 += d * d;
    r2 += double(r) * double(r);
  }
  for (int off = 16; off > 0; off >>= 1) {
    d2 += __shfl_xor_sync(0xffffffffu, d2, off);
    r2 += __shfl_xor_sync(0xffffffffu, r2, off);
    bad += __shfl_xor_sync(0xffffffffu, bad, off);
    ref_bad += __shfl_xor_sync(0xffffffffu, ref_bad, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&acc->diff2, d2);
    atomicAdd(&acc->ref2, r2);
    atomicAdd(&acc->nonfinite, bad);
    atomicAdd(&acc->ref_nonfinite, ref_bad);
  }
}

}  // namespace

Status quantize_fp8_per_tensor(const void* src_bf16, int64_t count, void* dst_e4m3, float* decode_scale,
                               float* amax_scratch, cudaStream_t stream) {
  GB_CUDA(cudaMemsetAsync(amax_scratch, 0, sizeof(float), stream), "cudaMemsetAsync(amax)");
  const auto* src = static_cast<const __nv_bfloat16*>(src_bf16);
  amax_bf16_kernel<<<grid_for(count, 8), kThreads, 0, stream>>>(src, count, amax_scratch);
  GB_CUDA(cudaGetLastError(), "amax_bf16_kernel");
  quantize_fp8_kernel<<<grid_for(count, 4), kThreads, 0, stream>>>(src, count, amax_scratch,
                                                                    static_cast<__nv_fp8_e4m3*>(dst_e4m3),
                                                                    decode_scale);
  GB_CUDA(cudaGetLastError(), "quantize_fp8_kernel");
  return Status::ok();
}

Status e4m3_to_bf16(const void* src_e4m3, int64_t count, void* dst_bf16, cudaStream_t stream) {
  e4m3_to_bf16_kernel<<<grid_for(count, 4), kThreads, 0, stream>>>(static_cast<const __nv_fp8_e4m3*>(src_e4m3),
                                                                    count, static_cast<__nv_bfloat16*>(dst_bf16));
  GB_CUDA(cudaGetLastError(), "e4m3_to_bf16_kernel");
  return Status::ok();
}

size_t rel_err_scratch_bytes() { return sizeof(ErrAccum); }

Status relative_error_bf16(const void* out, const void* ref, int64_t count, void* scratch, cudaStream_t stream,
                           RelErrResult* result) {
  auto* acc = static_cast<ErrAccum*>(scratch);
  GB_CUDA(cudaMemsetAsync(acc, 0, sizeof(ErrAccum), stream), "cudaMemsetAsync(err)");
  rel_err_kernel<<<grid_for(count, 8), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(out),
                                                               static_cast<const __nv_bfloat16*>(ref), count, acc);
  GB_CUDA(cudaGetLastError(), "rel_err_kernel");
  ErrAccum h{};
  GB_CUDA(cudaMemcpyAsync(&h, acc, sizeof(h), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync(err)");
  GB_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize (relative error)");
  result->nonfinite = static_cast<int64_t>(h.nonfinite);
  result->ref_nonfinite = static_cast<int64_t>(h.ref_nonfinite);
  result->ref_norm = std::sqrt(h.ref2);
  if (h.nonfinite > 0 || h.ref_nonfinite > 0) {
    result->rel_fro = std::nan("");
  } else {
    result->rel_fro = h.ref2 > 0 ? std::sqrt(h.diff2 / h.ref2) : (h.diff2 > 0 ? INFINITY : 0.0);
  }
  return Status::ok();
}

}  // namespace fp4kit::bench
