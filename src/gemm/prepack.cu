// prepack_weights: checkpoint NVFP4 layout -> the fragment-ordered layout of prepacked_layout.h.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "common/cuda_check.h"
#include "common/validate.h"
#include "fp4kit/gemm.h"
#include "fp4kit/layout.h"
#include "gemm/prepack.h"
#include "gemm/prepacked_layout.h"

namespace fp4kit {
namespace gemm_impl {
namespace {

// One thread per (matrix, chunk, lane): 16 code bytes (one 128-bit store) and, for lanes with
// c == 0, the 8 scale bytes of its rows.
__global__ void prepack_kernel(const uint8_t* __restrict__ codes, const uint8_t* __restrict__ scales,
                               int scale_layout, int64_t n, int64_t k, PrepackedShape shape, int64_t count,
                               int64_t code_stride, int64_t scale_stride, uint8_t* __restrict__ out,
                               int* __restrict__ nan_flag) {
  const int64_t per_matrix = shape.row_tiles * shape.k_chunks * 32;
  const int64_t total = per_matrix * count;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t e = idx / per_matrix;
    const int64_t rem = idx - e * per_matrix;
    const int lane = int(rem & 31);
    const int64_t chunk = rem >> 5;
    const int64_t t = chunk / shape.k_chunks, j = chunk % shape.k_chunks;
    uint32_t words[4];
    uint8_t sc[8];
    if (!prepack_lane(codes + e * code_stride, scales + e * scale_stride, scale_layout, n, k, t, j, lane, words, sc))
      atomicExch(nan_flag, 1);
    uint8_t* out_e = out + e * shape.bytes();
    reinterpret_cast<uint4*>(out_e)[rem] = make_uint4(words[0], words[1], words[2], words[3]);
    if ((lane & 3) == 0) {
      uint8_t* dst = out_e + shape.code_bytes() + chunk * kChunkScaleBytes + (lane >> 2) * 8;
      uint2 v;
      v.x = sc[0] | (sc[1] << 8) | (sc[2] << 16) | (uint32_t(sc[3]) << 24);
      v.y = sc[4] | (sc[5] << 8) | (sc[6] << 16) | (uint32_t(sc[7]) << 24);
      *reinterpret_cast<uint2*>(dst) = v;
    }
  }
}

}  // namespace

Status prepack_batched(const uint8_t* codes, const uint8_t* scales, ScaleLayout scale_layout, int64_t n, int64_t k,
                       int64_t count, int64_t code_stride, int64_t scale_stride, void* out, cudaStream_t stream,
                       const char* api) {
  const std::string name(api);
  // The NaN-scale check below synchronizes the stream; prepacking is a load-time step.
  FP4KIT_RETURN_IF_ERROR(detail::refuse_capture(
      stream, api, "synchronizes the stream (its NaN-scale check); call it outside a CUDA graph capture"));
  const PrepackedShape shape = prepacked_shape(n, k);
  int* nan_flag = nullptr;
  FP4KIT_CUDA_RETURN(cudaMallocAsync(&nan_flag, sizeof(int), stream), (name + ": cudaMallocAsync").c_str());
  FP4KIT_CUDA_RETURN(cudaMemsetAsync(nan_flag, 0, sizeof(int), stream), (name + ": cudaMemsetAsync").c_str());
  const int64_t threads = shape.row_tiles * shape.k_chunks * 32 * count;
  const int block = 256;
  const int grid = int(std::min<int64_t>((threads + block - 1) / block, 65535 * 4));
  prepack_kernel<<<grid, block, 0, stream>>>(codes, scales, scale_layout == ScaleLayout::kLinear ? 0 : 1, n, k, shape,
                                             count, code_stride, scale_stride, static_cast<uint8_t*>(out), nan_flag);
  const Status launched = detail::last_launch_status((name + ": prepack_kernel").c_str());
  int flag = 0;
  const Status copied =
      launched.is_ok() ? detail::cuda_status(cudaMemcpyAsync(&flag, nan_flag, sizeof(int), cudaMemcpyDeviceToHost, stream),
                                             (name + ": cudaMemcpyAsync").c_str())
                       : launched;
  // The flag is freed whatever happened above (stream-ordered), then errors are reported.
  const Status freed = detail::cuda_status(cudaFreeAsync(nan_flag, stream), (name + ": cudaFreeAsync").c_str());
  FP4KIT_RETURN_IF_ERROR(copied);
  FP4KIT_RETURN_IF_ERROR(freed);
  FP4KIT_CUDA_RETURN(cudaStreamSynchronize(stream), (name + ": cudaStreamSynchronize").c_str());
  if (flag) return Status(StatusCode::kInvalidArgument, name + ": a block scale is NaN (0x7F/0xFF)");
  return Status::ok();
}

}  // namespace gemm_impl

int64_t prepacked_weight_bytes(int64_t n, int64_t k) {
  // 0 outside the shapes the GEMMs take (n, k < 2^31), where the padded size could overflow.
  if (n <= 0 || k <= 0 || n >= (int64_t(1) << 31) || k >= (int64_t(1) << 31)) return 0;
  return gemm_impl::prepacked_shape(n, k).bytes();
}

Status prepack_weights(const WeightPrepackParams& p, cudaStream_t stream) {
  using detail::ArgCheck;
  ArgCheck check("prepack_weights");
  check.positive(p.n, "n")
      .positive(p.k, "k")
      .require(p.n < (int64_t(1) << 31) && p.k < (int64_t(1) << 31), StatusCode::kInvalidArgument,
               "n and k must each be < 2^31 (the GEMMs' limit)")
      .multiple_of(p.k, 16, "k", "NVFP4 block size")
      .not_null(p.codes, "codes")
      .not_null(p.scales, "scales")
      .not_null(p.out, "out")
      .require(p.scale_layout != ScaleLayout::kSwizzled8x4, StatusCode::kNotSupported,
               "scale_layout 8x4 is an activation layout; weights use linear or 128x4")
      .require(p.scale_layout == ScaleLayout::kLinear || p.scale_layout == ScaleLayout::kSwizzled128x4,
               StatusCode::kInvalidArgument,
               "scale_layout (=" + std::to_string(int(p.scale_layout)) + ") is not a ScaleLayout")
      .aligned(p.out, 16, "out")
      .buffer(p.out_bytes, prepacked_weight_bytes(p.n, p.k), "out");
  FP4KIT_RETURN_IF_ERROR(check.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("prepack_weights"));
  return gemm_impl::prepack_batched(p.codes, p.scales, p.scale_layout, p.n, p.k, 1, 0, 0, p.out, stream,
                                    "prepack_weights");
}

}  // namespace fp4kit
