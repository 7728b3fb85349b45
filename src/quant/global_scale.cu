// compute_global_scale on the GPU: amax over the tensor (or per row), NaNs ignored, then the global
// scale with the reference's guards (scale_from_amax below == reference_global_scale.cpp):
//   kExact / kFast: gs = 2688 / amax (FP32 RN); amax == 0 -> 1; gs overflows -> FLT_MAX; gs == 0 -> 1
//   kModelOpt:      ws2 = amax / 2688 (FP32 RN)
// Stream-ordered, no host synchronization, deterministic (max is order-independent).
//   per tensor: kernel 1 writes one partial max per CTA (<= kMaxPartials) into the workspace,
//               kernel 2 (one CTA) reduces them and writes gs / amax.
//   per row:    one kernel; a warp per row (cols < 4096) or a CTA per row, grid-stride over rows.
#include <cfloat>
#include <algorithm>

#include "common/cuda_check.h"
#include "fp4kit/quantize.h"
#include "quant/launch.h"
#include "quant/quant_common.cuh"
#include "quant/quant_validate.h"

namespace fp4kit {
namespace quant {
namespace {

constexpr int kGsThreads = 256;
constexpr int kMaxPartials = 1024;

__device__ __forceinline__ float scale_from_amax(float amax, QuantNumerics numerics) {
  if (numerics == QuantNumerics::kModelOpt) return __fdiv_rn(amax, 2688.0f);
  if (amax == 0.0f) return 1.0f;
  const float gs = __fdiv_rn(2688.0f, amax);
  if (gs > FLT_MAX) return FLT_MAX;
  if (gs == 0.0f) return 1.0f;
  return gs;
}

struct AmaxParams {
  const uint8_t* input;
  int64_t row_bytes, rows;
  int64_t items_per_row;  // ceil(cols / 16): the last item of a row is partial when cols % 16 != 0
  int64_t full_items;     // cols / 16
  int tail;               // cols % 16
  QuantNumerics numerics;
  float* partials;
  float* out_gs;
  float* out_amax;
};

// max |x| over one item (16 elements), NaNs ignored.
template <DType kIn, bool kVec>
__device__ __forceinline__ float item_abs_max(const uint8_t* p) {
  uint32_t w[InputType<kIn>::kWords];
  load_item<kIn, kVec>(p, w);
  float x[16];
  item_to_float<kIn>(w, x);
  float m = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) m = fmaxf(m, fabsf(x[i]));
  return m;
}

// max |x| over the row's partial last item: n < 16 elements, element loads.
template <DType kIn>
__device__ __forceinline__ float tail_abs_max(const uint8_t* p, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i) m = fmaxf(m, fabsf(load_element<kIn>(p, i)));
  return m;
}

template <DType kIn, bool kVec>
__device__ __forceinline__ float abs_max_at(const AmaxParams& p, int64_t r, int64_t g) {
  const uint8_t* q = p.input + r * p.row_bytes + g * InputType<kIn>::kItemBytes;
  return g < p.full_items ? item_abs_max<kIn, kVec>(q) : tail_abs_max<kIn>(q, p.tail);
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// Block-wide max; every thread gets the result.
__device__ __forceinline__ float block_max(float v) {
  __shared__ float warp_part[32];
  v = warp_max(v);
  __syncthreads();  // warp_part may still be read by a previous call
  if (threadIdx.x % 32 == 0) warp_part[threadIdx.x / 32] = v;
  __syncthreads();
  float r = threadIdx.x < blockDim.x / 32 ? warp_part[threadIdx.x] : 0.0f;
  return warp_max(r);
}

template <DType kIn, bool kVec>
__global__ void __launch_bounds__(kGsThreads) amax_partial_kernel(const AmaxParams p) {
  pdl_wait();
  const int64_t G = p.items_per_row, total = p.rows * G;
  float m = 0.0f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / G, g = i - r * G;
    m = fmaxf(m, abs_max_at<kIn, kVec>(p, r, g));
  }
  m = block_max(m);
  if (threadIdx.x == 0) p.partials[blockIdx.x] = m;
}

__global__ void __launch_bounds__(1024) amax_finalize_kernel(const AmaxParams p, int n) {
  float m = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, p.partials[i]);
  m = block_max(m);
  if (threadIdx.x == 0) {
    p.out_gs[0] = scale_from_amax(m, p.numerics);
    if (p.out_amax != nullptr) p.out_amax[0] = m;
  }
  pdl_launch_dependents();
}

// Per row. kCtaPerRow: a CTA reduces one row; otherwise each warp reduces one row.
template <DType kIn, bool kVec, bool kCtaPerRow>
__global__ void __launch_bounds__(kGsThreads) amax_rows_kernel(const AmaxParams p) {
  pdl_wait();
  const int64_t G = p.items_per_row;
  const int lane = threadIdx.x % 32;
  const int64_t unit = kCtaPerRow ? blockIdx.x : (int64_t(blockIdx.x) * (kGsThreads / 32) + threadIdx.x / 32);
  const int64_t units = kCtaPerRow ? gridDim.x : int64_t(gridDim.x) * (kGsThreads / 32);
  const int64_t first = kCtaPerRow ? threadIdx.x : lane;
  const int64_t step = kCtaPerRow ? kGsThreads : 32;
  for (int64_t r = unit; r < p.rows; r += units) {  // uniform per CTA (kCtaPerRow) or per warp
    float m = 0.0f;
    for (int64_t g = first; g < G; g += step)
      m = fmaxf(m, abs_max_at<kIn, kVec>(p, r, g));
    m = kCtaPerRow ? block_max(m) : warp_max(m);
    if ((kCtaPerRow ? threadIdx.x : lane) == 0) {
      p.out_gs[r] = scale_from_amax(m, p.numerics);
      if (p.out_amax != nullptr) p.out_amax[r] = m;
    }
  }
  pdl_launch_dependents();
}

template <DType kIn, bool kVec>
Status launch_global_scale(const AmaxParams& p, bool per_row, cudaStream_t stream) {
  const int sms = sm_count();
  if (!per_row) {
    auto* k1 = amax_partial_kernel<kIn, kVec>;
    const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(k1), kGsThreads, 0);
    const int64_t total = p.rows * p.items_per_row;
    const int grid = int(std::max<int64_t>(
        1, std::min<int64_t>({(total + kGsThreads - 1) / kGsThreads, int64_t(sms) * per_sm, kMaxPartials})));
    FP4KIT_RETURN_IF_ERROR(detail::cuda_status(
        launch_kernel(k1, dim3(grid), dim3(kGsThreads), 0, stream, false, p), "compute_global_scale: amax kernel"));
    return detail::cuda_status(launch_kernel(amax_finalize_kernel, dim3(1), dim3(1024), 0, stream, false, p, grid),
                               "compute_global_scale: finalize kernel");
  }
  const bool cta_per_row = p.items_per_row >= 256;
  auto* k = cta_per_row ? amax_rows_kernel<kIn, kVec, true> : amax_rows_kernel<kIn, kVec, false>;
  const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(k), kGsThreads, 0);
  const int64_t rows_per_cta = cta_per_row ? 1 : kGsThreads / 32;
  const int64_t grid = std::max<int64_t>(1, std::min<int64_t>((p.rows + rows_per_cta - 1) / rows_per_cta, int64_t(sms) * per_sm));
  return detail::cuda_status(launch_kernel(k, dim3(unsigned(grid)), dim3(kGsThreads), 0, stream, false, p),
                             "compute_global_scale: per-row kernel");
}

template <DType kIn>
Status launch_global_scale_typed(const AmaxParams& p, bool vec, bool per_row, cudaStream_t stream) {
  return vec ? launch_global_scale<kIn, true>(p, per_row, stream) : launch_global_scale<kIn, false>(p, per_row, stream);
}

}  // namespace
}  // namespace quant

size_t global_scale_workspace_bytes(const GlobalScaleParams& p) {
  return p.per_row ? 0 : size_t(quant::kMaxPartials) * sizeof(float);
}

Status compute_global_scale(const GlobalScaleParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  using namespace quant;
  ArgCheck c("compute_global_scale");
  c.not_null(p.input, "input").not_null(p.out_global_scale, "out_global_scale").positive(p.rows, "rows").positive(p.cols, "cols");
  check_stride(c, p.input_row_stride, p.cols, "input_row_stride");
  c.dtype_in(p.input_dtype, {DType::kBF16, DType::kFP16, DType::kFP32}, "input");
  c.require(valid_numerics(p.numerics), StatusCode::kInvalidArgument,
            "numerics " + enum_text(int(p.numerics)) + " is not a QuantNumerics");
  const int64_t stride = resolve_stride(p.input_row_stride, p.cols);
  const int64_t elem = c.ok() ? int64_t(dtype_size(p.input_dtype)) : 1;
  c.size_fits(p.rows, stride, elem, "input");
  const size_t need = global_scale_workspace_bytes(p);
  if (need > 0) {
    c.not_null(workspace, "workspace").workspace(workspace_bytes, size_t(need));
    c.aligned(workspace, 4, "workspace");
  }
  c.aligned(p.input, elem, "input").aligned(p.out_global_scale, 4, "out_global_scale").aligned(p.out_amax, 4, "out_amax");
  FP4KIT_RETURN_IF_ERROR(c.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("compute_global_scale"));

  AmaxParams k;
  k.input = static_cast<const uint8_t*>(p.input);
  k.row_bytes = stride * elem;
  k.rows = p.rows;
  k.items_per_row = (p.cols + 15) / 16;
  k.full_items = p.cols / 16;
  k.tail = int(p.cols % 16);
  k.numerics = p.numerics;
  k.partials = static_cast<float*>(workspace);
  k.out_gs = p.out_global_scale;
  k.out_amax = p.out_amax;
  const bool vec = aligned_to(p.input, 16) && k.row_bytes % 16 == 0;
  switch (p.input_dtype) {
    case DType::kBF16: return launch_global_scale_typed<DType::kBF16>(k, vec, p.per_row, stream);
    case DType::kFP16: return launch_global_scale_typed<DType::kFP16>(k, vec, p.per_row, stream);
    default: return launch_global_scale_typed<DType::kFP32>(k, vec, p.per_row, stream);
  }
}

}  // namespace fp4kit
