// prepack_moe_weights: `experts` checkpoint-layout NVFP4 matrices -> consecutive prepacked buffers
// (gemm/prepacked_layout.h), in one launch and one stream synchronization (for the NaN check).
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "common/cuda_check.h"
#include "common/validate.h"
#include "fp4kit/gemm.h"
#include "fp4kit/layout.h"
#include "fp4kit/moe.h"
#include "gemm/prepacked_layout.h"

namespace fp4kit {
namespace {

// One thread per (expert, chunk, lane), as prepack_weights' kernel for one matrix.
__global__ void moe_prepack_kernel(const uint8_t* __restrict__ codes, const uint8_t* __restrict__ scales,
                                   int scale_layout, int64_t n, int64_t k, gemm_impl::PrepackedShape shape,
                                   int64_t experts, int64_t code_stride, int64_t scale_stride,
                                   uint8_t* __restrict__ out, int* __restrict__ nan_flag) {
  const int64_t per_expert = shape.row_tiles * shape.k_chunks * 32;
  const int64_t total = per_expert * experts;
  const int64_t out_stride = shape.bytes();
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t e = idx / per_expert;
    const int64_t rem = idx - e * per_expert;
    const int lane = int(rem & 31);
    const int64_t chunk = rem >> 5;
    const int64_t t = chunk / shape.k_chunks, j = chunk % shape.k_chunks;
    uint32_t words[4];
    uint8_t sc[8];
    if (!gemm_impl::prepack_lane(codes + e * code_stride, scales + e * scale_stride, scale_layout, n, k, t, j, lane,
                                 words, sc))
      atomicExch(nan_flag, 1);
    uint8_t* out_e = out + e * out_stride;
    reinterpret_cast<uint4*>(out_e)[rem] = make_uint4(words[0], words[1], words[2], words[3]);
    if ((lane & 3) == 0) {
      uint8_t* dst = out_e + shape.code_bytes() + chunk * gemm_impl::kChunkScaleBytes + (lane >> 2) * 8;
      uint2 v;
      v.x = sc[0] | (sc[1] << 8) | (sc[2] << 16) | (uint32_t(sc[3]) << 24);
      v.y = sc[4] | (sc[5] << 8) | (sc[6] << 16) | (uint32_t(sc[7]) << 24);
      *reinterpret_cast<uint2*>(dst) = v;
    }
  }
}

}  // namespace

int64_t moe_prepacked_weight_bytes(int64_t experts, int64_t n, int64_t k) {
  if (experts <= 0 || n <= 0 || k <= 0) return 0;
  int64_t total = 0;
  if (!detail::checked_mul(experts, prepacked_weight_bytes(n, k), &total)) return 0;
  return total;
}

Status prepack_moe_weights(const MoeWeightPrepackParams& p, cudaStream_t stream) {
  using detail::ArgCheck;
  ArgCheck check("prepack_moe_weights");
  check.positive(p.experts, "experts")
      .positive(p.n, "n")
      .positive(p.k, "k")
      .multiple_of(p.k, 16, "k", "NVFP4 block size")
      .require(p.scale_layout == ScaleLayout::kLinear || p.scale_layout == ScaleLayout::kSwizzled128x4,
               p.scale_layout == ScaleLayout::kSwizzled8x4 ? StatusCode::kNotSupported : StatusCode::kInvalidArgument,
               p.scale_layout == ScaleLayout::kSwizzled8x4
                   ? "scale_layout 8x4 is an activation layout; weights use linear or 128x4"
                   : "scale_layout (=" + std::to_string(int(p.scale_layout)) + ") is not a ScaleLayout")
      .size_fits(p.n, p.k, 1, "weight");
  if (check.ok()) {
    int64_t per = 0, all = 0;
    check.require(detail::checked_mul(p.n, p.k / 2, &per) && detail::checked_mul(per, p.experts, &all) &&
                      detail::checked_mul(scale_buffer_bytes(BlockFormat::kNVFP4, p.scale_layout, p.n, p.k), p.experts,
                                          &all) &&
                      moe_prepacked_weight_bytes(p.experts, p.n, p.k) > 0,
                  StatusCode::kInvalidArgument,
                  "experts x weight size (" + std::to_string(p.experts) + " x " + std::to_string(p.n) + " x " +
                      std::to_string(p.k) + ") overflows 64-bit byte counts");
  }
  check.not_null(p.codes, "codes")
      .not_null(p.scales, "scales")
      .not_null(p.out, "out")
      .aligned(p.out, 16, "out")
      .buffer(p.out_bytes, moe_prepacked_weight_bytes(p.experts, p.n, p.k), "out");
  FP4KIT_RETURN_IF_ERROR(check.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("prepack_moe_weights"));

  const gemm_impl::PrepackedShape shape = gemm_impl::prepacked_shape(p.n, p.k);
  const int64_t code_stride = p.n * (p.k / 2);
  const int64_t scale_stride = scale_buffer_bytes(BlockFormat::kNVFP4, p.scale_layout, p.n, p.k);
  int* nan_flag = nullptr;
  FP4KIT_CUDA_RETURN(cudaMallocAsync(&nan_flag, sizeof(int), stream), "prepack_moe_weights: cudaMallocAsync");
  FP4KIT_CUDA_RETURN(cudaMemsetAsync(nan_flag, 0, sizeof(int), stream), "prepack_moe_weights: cudaMemsetAsync");
  const int64_t threads = shape.row_tiles * shape.k_chunks * 32 * p.experts;
  const int block = 256;
  const int grid = int(std::min<int64_t>((threads + block - 1) / block, 65535 * 4));
  moe_prepack_kernel<<<grid, block, 0, stream>>>(p.codes, p.scales, p.scale_layout == ScaleLayout::kLinear ? 0 : 1, p.n,
                                                 p.k, shape, p.experts, code_stride, scale_stride,
                                                 static_cast<uint8_t*>(p.out), nan_flag);
  const Status launched = detail::last_launch_status("prepack_moe_weights: moe_prepack_kernel");
  int flag = 0;
  const Status copied =
      launched.is_ok() ? detail::cuda_status(cudaMemcpyAsync(&flag, nan_flag, sizeof(int), cudaMemcpyDeviceToHost, stream),
                                             "prepack_moe_weights: cudaMemcpyAsync")
                       : launched;
  // The flag is freed whatever happened above (stream-ordered), then errors are reported.
  const Status freed = detail::cuda_status(cudaFreeAsync(nan_flag, stream), "prepack_moe_weights: cudaFreeAsync");
  FP4KIT_RETURN_IF_ERROR(copied);
  FP4KIT_RETURN_IF_ERROR(freed);
  FP4KIT_CUDA_RETURN(cudaStreamSynchronize(stream), "prepack_moe_weights: cudaStreamSynchronize");
  if (flag) return Status(StatusCode::kInvalidArgument, "prepack_moe_weights: a block scale is NaN (0x7F/0xFF)");
  return Status::ok();
}

}  // namespace fp4kit
