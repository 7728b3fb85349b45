// dequantize: NVFP4 / MXFP4 / MXFP8 -> BF16 / FP16 / FP32 on the GPU, bit-identical to
// fp4kit::reference::dequantize for every non-NaN result (NaN results are NaN on both; their
// payloads differ because CUDA arithmetic returns the canonical NaN).
//
//   NVFP4: v = (e2m1 * e4m3_scale) [exact in FP32] * decode_global_scale [FP32 RN, when given]
//   MXFP4: v = e2m1 * 2^(sf-127);  MXFP8: v = e4m3 * 2^(sf-127)   (UE8M0 0xFF -> NaN block)
// then one RNE rounding to the output type (hardware cvt.rn: equal to format::float_to_bf16 /
// float_to_fp16 for non-NaN inputs, proven by tests/quant/conversion_test.cu).
//
// Thread mapping as in the quantization kernels: a flat list of 16-element items (row, g), grid-
// stride, two items per thread in flight; 8-byte (FP4) or 16-byte (FP8) loads of the elements, one
// scale byte per item, 16-byte stores of the output when the output base and row stride allow.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <utility>

#include "common/cuda_check.h"
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "format/e2m1.h"
#include "format/e4m3.h"
#include "format/ue8m0.h"
#include "quant/launch.h"
#include "quant/quant_common.cuh"
#include "quant/quant_validate.h"

namespace fp4kit {
namespace quant {
namespace {

constexpr int kDqThreads = 256;
constexpr int kDqUnroll = 2;

struct DequantKernelParams {
  const uint8_t* elements;
  int64_t element_row_bytes;
  const uint8_t* scales;
  ScaleLayout layout;
  int64_t padded_cols;
  int64_t rows, items_per_row, step_rows, step_items;
  const float* dgs;  // NVFP4 decode global scale or null
  bool per_row;
  uint8_t* output;
  int64_t output_row_bytes;
};

// E2M1 code (4 bits) -> float, exact.
__device__ __forceinline__ float e2m1_value(uint32_t c) {
  const uint32_t m = c & 7u;
  const uint32_t mag = m >= 2u ? (m + 252u) << 22 : (m == 1u ? 0x3f000000u : 0u);  // 1.0 = 254 << 22
  return __uint_as_float(mag | ((c & 8u) << 28));
}

template <DType kOut>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  if constexpr (kOut == DType::kBF16) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// Writes 16 output values at p.
template <DType kOut, bool kVec>
__device__ __forceinline__ void store16(uint8_t* p, const float (&v)[16]) {
  if constexpr (kOut == DType::kFP32) {
    uint32_t w[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) w[i] = __float_as_uint(v[i]);
    if constexpr (kVec) {
#pragma unroll
      for (int q = 0; q < 4; ++q) st_stream_v4(p + 16 * q, w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) *reinterpret_cast<uint32_t*>(p + 4 * i) = w[i];
    }
  } else {
    uint32_t w[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = pack2<kOut>(v[2 * i], v[2 * i + 1]);
    if constexpr (kVec) {
      st_stream_v4(p, w[0], w[1], w[2], w[3]);
      st_stream_v4(p + 16, w[4], w[5], w[6], w[7]);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        *reinterpret_cast<uint16_t*>(p + 4 * i) = uint16_t(w[i] & 0xffffu);
        *reinterpret_cast<uint16_t*>(p + 4 * i + 2) = uint16_t(w[i] >> 16);
      }
    }
  }
}

template <BlockFormat kFormat>
constexpr int item_element_bytes() {
  return kFormat == BlockFormat::kMXFP8 ? 16 : 8;
}

template <BlockFormat kFormat, bool kVec>
__device__ __forceinline__ void load_elements(const uint8_t* p, uint32_t (&w)[4]) {
  if constexpr (kFormat == BlockFormat::kMXFP8) {
    if constexpr (kVec) {
      const uint4 q = ld_stream_v4(p);
      w[0] = q.x, w[1] = q.y, w[2] = q.z, w[3] = q.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        w[i] = 0;
#pragma unroll
        for (int b = 0; b < 4; ++b) w[i] |= uint32_t(p[4 * i + b]) << (8 * b);
      }
    }
  } else {
    if constexpr (kVec) {
      uint32_t a, b;
      asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "l"(p));
      w[0] = a, w[1] = b;
    } else {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        w[i] = 0;
#pragma unroll
        for (int b = 0; b < 4; ++b) w[i] |= uint32_t(p[4 * i + b]) << (8 * b);
      }
    }
    w[2] = w[3] = 0;
  }
}

template <BlockFormat kFormat, DType kOut, bool kVec>
__global__ void __launch_bounds__(kDqThreads) dequantize_kernel(const DequantKernelParams p) {
  pdl_wait();
  constexpr int kOutBytes = kOut == DType::kFP32 ? 4 : 2;
  const int64_t G = p.items_per_row;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t row = tid / G, g = tid - (tid / G) * G;
  const float dgs0 = (kFormat == BlockFormat::kNVFP4 && p.dgs != nullptr) ? __ldg(p.dgs) : 1.0f;
  while (row < p.rows) {
    int64_t r[kDqUnroll], c[kDqUnroll];
    uint32_t w[kDqUnroll][4];
    uint32_t sf[kDqUnroll];
#pragma unroll
    for (int j = 0; j < kDqUnroll; ++j) {
      r[j] = row;
      c[j] = g;
      g += p.step_items;
      row += p.step_rows;
      if (g >= G) {
        g -= G;
        ++row;
      }
    }
#pragma unroll
    for (int j = 0; j < kDqUnroll; ++j) {
      if (r[j] < p.rows) {
        load_elements<kFormat, kVec>(p.elements + r[j] * p.element_row_bytes + c[j] * item_element_bytes<kFormat>(),
                                     w[j]);
        const int64_t k = kFormat == BlockFormat::kNVFP4 ? c[j] : (c[j] >> 1);
        sf[j] = __ldg(p.scales + sf_offset(p.layout, r[j], k, p.padded_cols));
      }
    }
    [&]<int... J>(std::integer_sequence<int, J...>) {
      ([&] {
        if (r[J] >= p.rows) return;
        float v[16];
        if constexpr (kFormat == BlockFormat::kNVFP4) {
          const float s = format::e4m3_to_float(uint8_t(sf[J]));
          const bool has_dgs = p.dgs != nullptr;
          const float d = p.per_row ? __ldg(p.dgs + r[J]) : dgs0;
#pragma unroll
          for (int i = 0; i < 16; ++i) {
            const float x = __fmul_rn(e2m1_value(w[J][i / 8] >> (4 * (i % 8))), s);  // exact
            v[i] = has_dgs ? __fmul_rn(x, d) : x;
          }
        } else {
          const float s = sf[J] == 0xffu ? __uint_as_float(0x7fffffffu) : format::ue8m0_to_float(uint8_t(sf[J]));
#pragma unroll
          for (int i = 0; i < 16; ++i) {
            float x;
            if constexpr (kFormat == BlockFormat::kMXFP4) {
              x = e2m1_value(w[J][i / 8] >> (4 * (i % 8)));
            } else {
              x = format::e4m3_to_float(uint8_t(w[J][i / 4] >> (8 * (i % 4))));
            }
            v[i] = __fmul_rn(x, s);
          }
        }
        store16<kOut, kVec>(p.output + r[J] * p.output_row_bytes + c[J] * 16 * kOutBytes, v);
      }(), ...);
    }(std::make_integer_sequence<int, kDqUnroll>{});
  }
  pdl_launch_dependents();
}

template <BlockFormat kFormat, DType kOut>
Status launch_dequantize(const DequantKernelParams& base, int64_t cols, bool vec, cudaStream_t stream) {
  auto* kernel = vec ? dequantize_kernel<kFormat, kOut, true> : dequantize_kernel<kFormat, kOut, false>;
  DequantKernelParams p = base;
  const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernel), kDqThreads, 0);
  p.items_per_row = cols / 16;
  const int64_t items = p.rows * p.items_per_row;
  const int64_t grid =
      std::max<int64_t>(1, std::min<int64_t>((items + kDqThreads - 1) / kDqThreads, int64_t(sm_count()) * per_sm));
  const int64_t threads = grid * kDqThreads;
  p.step_rows = threads / p.items_per_row;
  p.step_items = threads % p.items_per_row;
  return detail::cuda_status(launch_kernel(kernel, dim3(unsigned(grid)), dim3(kDqThreads), 0, stream, false, p),
                             "dequantize: kernel launch");
}

template <BlockFormat kFormat>
Status launch_dequantize_fmt(const DequantKernelParams& p, DType out, int64_t cols, bool vec, cudaStream_t stream) {
  switch (out) {
    case DType::kBF16: return launch_dequantize<kFormat, DType::kBF16>(p, cols, vec, stream);
    case DType::kFP16: return launch_dequantize<kFormat, DType::kFP16>(p, cols, vec, stream);
    default: return launch_dequantize<kFormat, DType::kFP32>(p, cols, vec, stream);
  }
}

}  // namespace
}  // namespace quant

Status dequantize(const DequantizeParams& p, cudaStream_t stream) {
  using namespace quant;
  ArgCheck c("dequantize");
  const bool valid_format =
      p.format == BlockFormat::kNVFP4 || p.format == BlockFormat::kMXFP4 || p.format == BlockFormat::kMXFP8;
  c.require(valid_format, StatusCode::kInvalidArgument, "format " + enum_text(int(p.format)) + " is not a BlockFormat");
  c.not_null(p.elements, "elements")
      .not_null(p.scales, "scales")
      .not_null(p.output, "output")
      .positive(p.rows, "rows")
      .positive(p.cols, "cols");
  if (c.ok()) c.multiple_of(p.cols, block_size(p.format), "cols", "block size of the format");
  check_stride(c, p.output_row_stride, p.cols, "output_row_stride");
  c.dtype_in(p.output_dtype, {DType::kBF16, DType::kFP16, DType::kFP32}, "output");
  check_layout(c, p.scale_layout, "scale_layout");
  if (c.ok() && p.format != BlockFormat::kNVFP4) {
    c.require(p.decode_global_scale == nullptr, StatusCode::kInvalidArgument,
              std::string("decode_global_scale must be null for ") + block_format_name(p.format) +
                  " (MX formats have no global scale)");
  }
  c.require(!p.per_row_global_scale || p.decode_global_scale != nullptr, StatusCode::kInvalidArgument,
            "per_row_global_scale is set but decode_global_scale is null");
  const int64_t stride = resolve_stride(p.output_row_stride, p.cols);
  const int64_t out_size = c.ok() ? int64_t(dtype_size(p.output_dtype)) : 1;
  c.size_fits(p.rows, stride, out_size, "output");
  ScaleShape shape{0, 0};
  if (c.ok()) check_scale_shape(c, p.scale_layout, p.rows, p.cols / block_size(p.format), "scales", &shape);
  if (c.ok()) c.buffer(p.output_bytes, ((p.rows - 1) * stride + p.cols) * out_size, "output");
  c.aligned(p.output, out_size, "output").aligned(p.decode_global_scale, 4, "decode_global_scale");
  FP4KIT_RETURN_IF_ERROR(c.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("dequantize"));

  DequantKernelParams k{};
  k.elements = static_cast<const uint8_t*>(p.elements);
  k.element_row_bytes = p.format == BlockFormat::kMXFP8 ? p.cols : p.cols / 2;
  k.scales = static_cast<const uint8_t*>(p.scales);
  k.layout = p.scale_layout;
  k.padded_cols = shape.padded_cols;
  k.rows = p.rows;
  k.dgs = p.decode_global_scale;
  k.per_row = p.per_row_global_scale;
  k.output = static_cast<uint8_t*>(p.output);
  k.output_row_bytes = stride * out_size;
  const bool vec = aligned_to(p.output, 16) && k.output_row_bytes % 16 == 0 &&
                   aligned_to(p.elements, p.format == BlockFormat::kMXFP8 ? 16 : 8);
  switch (p.format) {
    case BlockFormat::kNVFP4: return launch_dequantize_fmt<BlockFormat::kNVFP4>(k, p.output_dtype, p.cols, vec, stream);
    case BlockFormat::kMXFP4: return launch_dequantize_fmt<BlockFormat::kMXFP4>(k, p.output_dtype, p.cols, vec, stream);
    case BlockFormat::kMXFP8: return launch_dequantize_fmt<BlockFormat::kMXFP8>(k, p.output_dtype, p.cols, vec, stream);
  }
  return Status(StatusCode::kInternal, "dequantize: unexpected format");
}

}  // namespace fp4kit
