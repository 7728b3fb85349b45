// prepack_weights: checkpoint NVFP4 layout -> the fragment-ordered layout of prepacked_layout.h.
#include <cuda_runtime.h>

#include "common/cuda_check.h"
#include "common/validate.h"
#include "fp4kit/gemm.h"
#include "fp4kit/layout.h"
#include "gemm/prepacked_layout.h"

namespace fp4kit {
namespace {

// One thread per (chunk, lane): 16 code bytes (one 128-bit store) and, for lanes with c == 0,
// the 8 scale bytes of its rows.
__global__ void prepack_kernel(const uint8_t* __restrict__ codes, const uint8_t* __restrict__ scales,
                               int scale_layout, int64_t n, int64_t k, gemm_impl::PrepackedShape shape,
                               uint8_t* __restrict__ out, int* __restrict__ nan_flag) {
  const int64_t total = shape.row_tiles * shape.k_chunks * 32;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int lane = int(idx & 31);
    const int64_t chunk = idx >> 5;
    const int64_t t = chunk / shape.k_chunks, j = chunk % shape.k_chunks;
    uint32_t words[4];
    uint8_t sc[8];
    if (!gemm_impl::prepack_lane(codes, scales, scale_layout, n, k, t, j, lane, words, sc)) atomicExch(nan_flag, 1);
    reinterpret_cast<uint4*>(out)[idx] = make_uint4(words[0], words[1], words[2], words[3]);
    if ((lane & 3) == 0) {
      uint8_t* dst = out + shape.code_bytes() + chunk * gemm_impl::kChunkScaleBytes + (lane >> 2) * 8;
      uint2 v;
      v.x = sc[0] | (sc[1] << 8) | (sc[2] << 16) | (uint32_t(sc[3]) << 24);
      v.y = sc[4] | (sc[5] << 8) | (sc[6] << 16) | (uint32_t(sc[7]) << 24);
      *reinterpret_cast<uint2*>(dst) = v;
    }
  }
}

}  // namespace

int64_t prepacked_weight_bytes(int64_t n, int64_t k) {
  if (n <= 0 || k <= 0) return 0;
  return gemm_impl::prepacked_shape(n, k).bytes();
}

Status prepack_weights(const WeightPrepackParams& p, cudaStream_t stream) {
  using detail::ArgCheck;
  ArgCheck check("prepack_weights");
  check.positive(p.n, "n")
      .positive(p.k, "k")
      .multiple_of(p.k, 16, "k", "NVFP4 block size")
      .size_fits(p.n, p.k, 1, "weight")
      .not_null(p.codes, "codes")
      .not_null(p.scales, "scales")
      .not_null(p.out, "out")
      .require(p.scale_layout != ScaleLayout::kSwizzled8x4, StatusCode::kNotSupported,
               "scale_layout 8x4 is an activation layout; weights use linear or 128x4")
      .aligned(p.out, 16, "out")
      .buffer(p.out_bytes, prepacked_weight_bytes(p.n, p.k), "out");
  FP4KIT_RETURN_IF_ERROR(check.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("prepack_weights"));

  const gemm_impl::PrepackedShape shape = gemm_impl::prepacked_shape(p.n, p.k);
  int* nan_flag = nullptr;
  FP4KIT_CUDA_RETURN(cudaMallocAsync(&nan_flag, sizeof(int), stream), "prepack_weights: cudaMallocAsync");
  FP4KIT_CUDA_RETURN(cudaMemsetAsync(nan_flag, 0, sizeof(int), stream), "prepack_weights: cudaMemsetAsync");
  const int64_t threads = shape.row_tiles * shape.k_chunks * 32;
  const int block = 256;
  const int grid = int(std::min<int64_t>((threads + block - 1) / block, 65535 * 4));
  prepack_kernel<<<grid, block, 0, stream>>>(p.codes, p.scales,
                                             p.scale_layout == ScaleLayout::kLinear ? 0 : 1, p.n, p.k,
                                             shape, static_cast<uint8_t*>(p.out), nan_flag);
  FP4KIT_RETURN_IF_ERROR(detail::last_launch_status("prepack_kernel"));
  int flag = 0;
  FP4KIT_CUDA_RETURN(cudaMemcpyAsync(&flag, nan_flag, sizeof(int), cudaMemcpyDeviceToHost, stream),
                     "prepack_weights: cudaMemcpyAsync");
  FP4KIT_CUDA_RETURN(cudaFreeAsync(nan_flag, stream), "prepack_weights: cudaFreeAsync");
  FP4KIT_CUDA_RETURN(cudaStreamSynchronize(stream), "prepack_weights: cudaStreamSynchronize");
  if (flag) return Status(StatusCode::kInvalidArgument, "prepack_weights: a block scale is NaN (0x7F/0xFF)");
  return Status::ok();
}

}  // namespace fp4kit
