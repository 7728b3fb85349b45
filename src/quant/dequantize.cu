// dequantize: NVFP4 / MXFP4 / MXFP8 -> BF16 / FP16 / FP32 on the GPU, bit-identical to
// fp4kit::reference::dequantize for every non-NaN result (NaN results are NaN on both; their
// payloads differ because CUDA arithmetic returns the canonical NaN).
//
//   NVFP4: v = (e2m1 * e4m3_scale) [exact in FP32] * decode_global_scale [FP32 RN, when given]
//   MXFP4: v = e2m1 * 2^(sf-127);  MXFP8: v = e4m3 * 2^(sf-127)   (UE8M0 0xFF -> NaN block)
// then one RNE rounding to the output type (hardware cvt.rn: equal to format::float_to_bf16 /
// float_to_fp16 for non-NaN inputs, proven by tests/quant/conversion_test.cu).
//
// Thread mapping: see dequantize_kernel (16-byte output units, one per lane, coalesced).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <utility>

#include "common/cuda_check.h"
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "format/e2m1.h"
#include "format/e2m1x8.h"
#include "format/e4m3.h"
#include "format/ue8m0.h"
#include "quant/launch.h"
#include "quant/quant_common.cuh"
#include "quant/quant_validate.h"

namespace fp4kit {
namespace quant {
namespace {

constexpr int kDqThreads = 256;

struct DequantKernelParams {
  const uint8_t* elements;
  int64_t element_row_bytes;
  const uint8_t* scales;
  ScaleLayout layout;
  int64_t padded_cols;
  int64_t rows, items_per_row;
  const float* dgs;  // NVFP4 decode global scale or null
  bool per_row;
  uint8_t* output;
  int64_t output_row_bytes;
  bool pdl;
};

__device__ __forceinline__ uint32_t bf16x2_bits(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}
__device__ __forceinline__ float bf16_lo(uint32_t v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t v) { return __uint_as_float(v & 0xffff0000u); }

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

// Thread mapping: the output is cut into *units* of 16 bytes (8 BF16/FP16 or 4 FP32 values, a
// half or a quarter of a 16-element item); lane l of a warp takes unit u0 + l, so every 16-byte
// store instruction of a warp writes 512 contiguous bytes (whole sectors), and the element loads
// (2, 4 or 8 bytes per unit) are contiguous across the warp too. Each thread takes kDqUnits units
// per iteration of a persistent grid-stride loop and issues all their loads (elements + scale
// byte) before decoding any. (row, unit-in-row) advance incrementally; no division in the loop.
constexpr int kDqUnits = 4;

template <DType kOut>
constexpr int unit_elems() {
  return kOut == DType::kFP32 ? 4 : 8;
}
template <BlockFormat kFormat, DType kOut>
constexpr int unit_element_bytes() {
  return kFormat == BlockFormat::kMXFP8 ? unit_elems<kOut>() : unit_elems<kOut>() / 2;
}

template <int kBytes, bool kVec>
__device__ __forceinline__ uint2 load_unit(const uint8_t* p) {
  uint2 v = {0u, 0u};
  if constexpr (kVec && kBytes == 8) {
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  } else if constexpr (kVec && kBytes == 4) {
    asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v.x) : "l"(p));
  } else if constexpr (kVec && kBytes == 2) {
    uint16_t h;
    asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(h) : "l"(p));
    v.x = h;
  } else {
#pragma unroll
    for (int i = 0; i < kBytes; ++i) (i < 4 ? v.x : v.y) |= uint32_t(__ldg(p + i)) << (8 * (i % 4));
  }
  return v;
}

// Decodes one unit (its element bytes in e, the item's scale byte sf) into 16 output bytes.
template <BlockFormat kFormat, DType kOut>
__device__ __forceinline__ uint4 dq_unit(const DequantKernelParams& p, uint2 e, uint32_t sf, int64_t row, float dgs0) {
  constexpr int kN = unit_elems<kOut>();
  float v[kN];
  if constexpr (kFormat == BlockFormat::kMXFP8) {
    const float s = sf == 0xffu ? __uint_as_float(0x7fffffffu) : format::ue8m0_to_float(uint8_t(sf));
#pragma unroll
    for (int i = 0; i < kN / 2; ++i) {
      // E4M3 pair -> FP16 pair (exact, NaN -> NaN) -> FP32.
      uint32_t h2;
      const uint32_t word = i < 2 ? e.x : e.y;
      asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(uint16_t(word >> (16 * (i % 2)))));
      const __half2 hv = *reinterpret_cast<const __half2*>(&h2);
      v[2 * i] = __fmul_rn(__low2float(hv), s);
      v[2 * i + 1] = __fmul_rn(__high2float(hv), s);
    }
  } else {
    uint32_t b[4];  // signed E2M1 values as BF16x2, exact (kN / 2 words used)
    format::e2m1x8_to_bf16x2(e.x, b);  // (format/e2m1x8.h: byte permutes, signs)
    if constexpr (kFormat == BlockFormat::kNVFP4) {
      // e2m1 * e4m3 has at most 6 significant bits and lies in [2^-10, 2688]: exact in BF16, so
      // the BF16x2 product is the reference's exact FP32 product.
      const float s = format::e4m3_to_float(uint8_t(sf));
      const uint32_t s2 = bf16x2_bits(s, s);
#pragma unroll
      for (int i = 0; i < kN / 2; ++i) {
        const __nv_bfloat162 prod = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&b[i]),
                                            *reinterpret_cast<const __nv_bfloat162*>(&s2));
        b[i] = *reinterpret_cast<const uint32_t*>(&prod);
      }
      if constexpr (kOut == DType::kBF16) {
        if (p.dgs == nullptr) return make_uint4(b[0], b[1], b[2], b[3]);  // already the output
      }
      const bool has_dgs = p.dgs != nullptr;
      const float d = p.per_row ? __ldg(p.dgs + row) : dgs0;
#pragma unroll
      for (int i = 0; i < kN / 2; ++i) {
        const float lo = bf16_lo(b[i]), hi = bf16_hi(b[i]);
        v[2 * i] = has_dgs ? __fmul_rn(lo, d) : lo;
        v[2 * i + 1] = has_dgs ? __fmul_rn(hi, d) : hi;
      }
    } else {  // MXFP4: times 2^(sf-127), exact unless it leaves FP32's range
      const float s = sf == 0xffu ? __uint_as_float(0x7fffffffu) : format::ue8m0_to_float(uint8_t(sf));
#pragma unroll
      for (int i = 0; i < kN / 2; ++i) {
        v[2 * i] = __fmul_rn(bf16_lo(b[i]), s);
        v[2 * i + 1] = __fmul_rn(bf16_hi(b[i]), s);
      }
    }
  }
  if constexpr (kOut == DType::kFP32) {
    return make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]));
  } else {
    return make_uint4(pack2<kOut>(v[0], v[1]), pack2<kOut>(v[2], v[3]), pack2<kOut>(v[4], v[5]), pack2<kOut>(v[6], v[7]));
  }
}

template <BlockFormat kFormat, DType kOut, bool kVec>
__global__ void __launch_bounds__(kDqThreads) dequantize_kernel(const DequantKernelParams p) {
  pdl_begin_persistent();
  constexpr int kUpi = 16 / unit_elems<kOut>();              // units per item: 2 or 4
  constexpr int kLog2Upi = kUpi == 2 ? 1 : 2;
  constexpr int kEB = unit_element_bytes<kFormat, kOut>();  // element bytes per unit
  const int64_t UR = p.items_per_row * kUpi;                 // units per row
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t T = int64_t(gridDim.x) * blockDim.x;
  int64_t row = tid / UR, c = tid - (tid / UR) * UR;
  const int64_t step_rows = T / UR, step_c = T - (T / UR) * UR;
  const float dgs0 = (kFormat == BlockFormat::kNVFP4 && p.dgs != nullptr) ? __ldg(p.dgs) : 1.0f;
  while (row < p.rows) {
    int64_t r[kDqUnits], cc[kDqUnits];
    uint2 e[kDqUnits];
    uint32_t sf[kDqUnits];
#pragma unroll
    for (int j = 0; j < kDqUnits; ++j) {
      r[j] = row;
      cc[j] = c;
      c += step_c;
      row += step_rows;
      if (c >= UR) {
        c -= UR;
        ++row;
      }
    }
#pragma unroll
    for (int j = 0; j < kDqUnits; ++j) {
      e[j] = make_uint2(0u, 0u);
      sf[j] = 0;
      if (r[j] < p.rows) {
        e[j] = load_unit<kEB, kVec>(p.elements + r[j] * p.element_row_bytes + cc[j] * kEB);
        const int64_t g = cc[j] >> kLog2Upi;
        sf[j] = __ldg(p.scales +
                      sf_offset(p.layout, r[j], kFormat == BlockFormat::kNVFP4 ? g : (g >> 1), p.padded_cols));
      }
    }
#pragma unroll
    for (int j = 0; j < kDqUnits; ++j) {
      if (r[j] >= p.rows) break;
      const uint4 out = dq_unit<kFormat, kOut>(p, e[j], sf[j], r[j], dgs0);
      uint8_t* o = p.output + r[j] * p.output_row_bytes + cc[j] * 16;
      if constexpr (kVec) {
        st_global_v4(o, out.x, out.y, out.z, out.w);
      } else {
        const uint32_t wv[4] = {out.x, out.y, out.z, out.w};
#pragma unroll
        for (int i = 0; i < 8; ++i) *reinterpret_cast<uint16_t*>(o + 2 * i) = uint16_t(wv[i / 2] >> (16 * (i % 2)));
      }
    }
  }
}

template <BlockFormat kFormat, DType kOut>
Status launch_dequantize(const DequantKernelParams& base, int64_t cols, bool vec, cudaStream_t stream) {
  auto* kernel = vec ? dequantize_kernel<kFormat, kOut, true> : dequantize_kernel<kFormat, kOut, false>;
  DequantKernelParams p = base;
  const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernel), kDqThreads, 0);
  p.items_per_row = cols / 16;
  const int64_t units = p.rows * p.items_per_row * (16 / unit_elems<kOut>());
  const int64_t want = (units + int64_t(kDqThreads) * kDqUnits - 1) / (int64_t(kDqThreads) * kDqUnits);
  const int64_t grid = std::max<int64_t>(1, std::min<int64_t>(want, int64_t(sm_count()) * per_sm));
  return detail::cuda_status(launch_kernel(kernel, dim3(unsigned(grid)), dim3(kDqThreads), 0, stream, p.pdl, p),
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
  check_stride(c, p.element_row_stride, p.cols, "element_row_stride");
  if (c.ok() && p.element_row_stride != 0)
    c.multiple_of(p.element_row_stride, block_size(p.format), "element_row_stride", "block size of the format");
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
  c.size_fits(p.rows, resolve_stride(p.element_row_stride, p.cols), 1, "elements");
  ScaleShape shape{0, 0};
  if (c.ok()) check_scale_shape(c, p.scale_layout, p.rows, p.cols / block_size(p.format), "scales", &shape);
  if (c.ok()) c.buffer(p.output_bytes, ((p.rows - 1) * stride + p.cols) * out_size, "output");
  c.aligned(p.output, out_size, "output").aligned(p.decode_global_scale, 4, "decode_global_scale");
  FP4KIT_RETURN_IF_ERROR(c.status());
  FP4KIT_RETURN_IF_ERROR(detail::require_device("dequantize"));

  DequantKernelParams k{};
  k.elements = static_cast<const uint8_t*>(p.elements);
  const int64_t element_stride = resolve_stride(p.element_row_stride, p.cols);
  k.element_row_bytes = p.format == BlockFormat::kMXFP8 ? element_stride : element_stride / 2;
  k.scales = static_cast<const uint8_t*>(p.scales);
  k.layout = p.scale_layout;
  k.padded_cols = shape.padded_cols;
  k.rows = p.rows;
  k.dgs = p.decode_global_scale;
  k.per_row = p.per_row_global_scale;
  k.output = static_cast<uint8_t*>(p.output);
  k.output_row_bytes = stride * out_size;
  k.pdl = p.enable_pdl;
  // Vector path: 16-byte output base and row stride, element base aligned to the unit's element
  // bytes (8 is enough for all).
  const bool vec = aligned_to(p.output, 16) && k.output_row_bytes % 16 == 0 && aligned_to(p.elements, 8);
  switch (p.format) {
    case BlockFormat::kNVFP4: return launch_dequantize_fmt<BlockFormat::kNVFP4>(k, p.output_dtype, p.cols, vec, stream);
    case BlockFormat::kMXFP4: return launch_dequantize_fmt<BlockFormat::kMXFP4>(k, p.output_dtype, p.cols, vec, stream);
    case BlockFormat::kMXFP8: return launch_dequantize_fmt<BlockFormat::kMXFP8>(k, p.output_dtype, p.cols, vec, stream);
  }
  return Status(StatusCode::kInternal, "dequantize: unexpected format");
}

}  // namespace fp4kit
