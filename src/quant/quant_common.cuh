// Device helpers shared by the quantization kernels: input element access, streaming memory
// operations, programmatic dependent launch (PDL) and the scale-factor offset of each layout.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "fp4kit/types.h"
#include "format/float16.h"
#include "format/scale_layout.h"
#include "quant/sf_offset.h"

namespace fp4kit::quant {

inline constexpr unsigned kFullMask = 0xffffffffu;

// ---- programmatic dependent launch --------------------------------------------------------------
// Both are no-ops when the grid was not launched with the PDL attribute (and for the dependents of
// a grid that was not). Every thread waits before its first global read or write, so a kernel never
// touches memory that the previous kernel in the stream may still be using.
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// ---- memory -------------------------------------------------------------------------------------
// Loads of data read once (ld.global.cs: evict-first). Plain loads, not volatile asm: the compiler
// may schedule them freely (loop-invariant code motion needs that), and pdl_wait()'s memory clobber
// still keeps them after the wait.
__device__ __forceinline__ uint4 ld_stream_v4(const void* p) { return __ldcs(static_cast<const uint4*>(p)); }
__device__ __forceinline__ uint32_t ld_u32(const void* p) { return __ldcs(static_cast<const unsigned int*>(p)); }
__device__ __forceinline__ uint16_t ld_u16(const void* p) { return __ldcs(static_cast<const unsigned short*>(p)); }
// Streaming stores (evict-first): outputs are not re-read by this kernel.
__device__ __forceinline__ void st_stream_v2(void* p, uint32_t a, uint32_t b) {
  asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(a), "r"(b) : "memory");
}
__device__ __forceinline__ void st_stream_v4(void* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
}
__device__ __forceinline__ void st_u8(void* p, uint32_t v) {
  asm volatile("st.global.u8 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// ---- input element types ------------------------------------------------------------------------
// An "item" is 16 consecutive input elements of one row: 32 bytes of BF16/FP16 or 64 of FP32, i.e.
// kWords 32-bit words. Converting to FP32 is exact for all three types.
template <DType kIn>
struct InputType {
  static_assert(kIn == DType::kBF16 || kIn == DType::kFP16 || kIn == DType::kFP32);
  static constexpr int kBytes = kIn == DType::kFP32 ? 4 : 2;
  static constexpr int kItemBytes = 16 * kBytes;
  static constexpr int kWords = kItemBytes / 4;  // 8 or 16
  static constexpr int kVec4 = kItemBytes / 16;  // 16-byte loads per item: 2 or 4
};

// Raw words of one item -> 16 floats (element i of the item in x[i]).
template <DType kIn>
__device__ __forceinline__ void item_to_float(const uint32_t (&w)[InputType<kIn>::kWords], float (&x)[16]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    if constexpr (kIn == DType::kFP32) {
      x[i] = __uint_as_float(w[i]);
    } else if constexpr (kIn == DType::kBF16) {
      const uint32_t v = w[i / 2];
      x[i] = __uint_as_float((i & 1) ? (v & 0xffff0000u) : (v << 16));
    } else {
      // Hardware f16 -> f32 is exact for every finite value and infinity; NaN payloads may be
      // canonicalized, which no result depends on (NaN blocks take the reference path).
      const uint32_t v = w[i / 2];
      x[i] = __half2float(__ushort_as_half(static_cast<unsigned short>((i & 1) ? (v >> 16) : (v & 0xffffu))));
    }
  }
}

// Loads one item at `p` (the address of its first element). kVec: p is 16-byte aligned and 16-byte
// vector loads are used; otherwise element-sized loads (p aligned to the element size).
template <DType kIn, bool kVec>
__device__ __forceinline__ void load_item(const uint8_t* p, uint32_t (&w)[InputType<kIn>::kWords]) {
  using T = InputType<kIn>;
  if constexpr (kVec) {
#pragma unroll
    for (int v = 0; v < T::kVec4; ++v) {
      const uint4 q = ld_stream_v4(p + 16 * v);
      w[4 * v + 0] = q.x;
      w[4 * v + 1] = q.y;
      w[4 * v + 2] = q.z;
      w[4 * v + 3] = q.w;
    }
  } else if constexpr (T::kBytes == 4) {
#pragma unroll
    for (int i = 0; i < T::kWords; ++i) w[i] = ld_u32(p + 4 * i);
  } else {
#pragma unroll
    for (int i = 0; i < T::kWords; ++i)
      w[i] = uint32_t(ld_u16(p + 4 * i)) | (uint32_t(ld_u16(p + 4 * i + 2)) << 16);
  }
}

// One element (index i of a row starting at p) -> float, for the reference fallback paths.
template <DType kIn>
__device__ __forceinline__ float load_element(const uint8_t* p, int64_t i) {
  if constexpr (kIn == DType::kFP32) {
    return __uint_as_float(ld_u32(p + 4 * i));
  } else if constexpr (kIn == DType::kBF16) {
    return format::bf16_to_float(ld_u16(p + 2 * i));
  } else {
    return format::fp16_to_float(ld_u16(p + 2 * i));
  }
}

// ---- scale-factor layouts -----------------------------------------------------------------------
// Byte offset of scale (row m, scale column k); `padded_cols` = the buffer's padded column count
// (sf_cols for kLinear).
__device__ __forceinline__ int64_t sf_offset(ScaleLayout layout, int64_t m, int64_t k, int64_t padded_cols) {
  return int64_t(sf_offset_u(layout, uint64_t(m), uint64_t(k), uint64_t(padded_cols)));
}

// Geometry of a scale buffer: rows x sf_cols logical scales inside padded_rows x padded_cols.
struct ScaleGeometry {
  ScaleLayout layout;
  int64_t rows, sf_cols, padded_rows, padded_cols;
};

// Zero the padding entries of a swizzled scale buffer (rows [0, rows) x cols [sf_cols,
// padded_cols), and rows [rows, padded_rows) x all columns), grid-stride over `thread` / `nthreads`.
__device__ __forceinline__ void zero_scale_padding(const ScaleGeometry& g, uint8_t* scales, int64_t thread,
                                                   int64_t nthreads) {
  if (g.layout == ScaleLayout::kLinear) return;
  const int64_t col_pad = g.padded_cols - g.sf_cols;
  const int64_t n_a = g.rows * col_pad;
  const int64_t n_b = (g.padded_rows - g.rows) * g.padded_cols;
  for (int64_t i = thread; i < n_a + n_b; i += nthreads) {
    int64_t m, k;
    if (i < n_a) {
      m = i / col_pad;
      k = g.sf_cols + (i - m * col_pad);
    } else {
      const int64_t j = i - n_a;
      m = g.rows + j / g.padded_cols;
      k = j % g.padded_cols;
    }
    scales[sf_offset(g.layout, m, k, g.padded_cols)] = 0;
  }
}

}  // namespace fp4kit::quant
