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
// Start of a persistent kernel: wait for the previous grid, then let the next one launch at once.
// Every CTA of a persistent grid is resident from the start, so the dependents' CTAs only take
// resources as ours retire, and they wait (griddepcontrol.wait) for this grid's completion and
// memory flush before touching memory: their launch latency and prologue overlap our tail.
__device__ __forceinline__ void pdl_begin_persistent() {
  pdl_wait();
  pdl_launch_dependents();
}

// ---- memory -------------------------------------------------------------------------------------
// Input loads through the read-only path with the default (evict-normal) L2 policy, outputs with
// plain stores. Measured on the H100 (docs/PERF.md, session 4): evict-first loads (ld.global.cs)
// cost 2-4 points of copy bandwidth against __ldg, and ld.global.nc.L2::256B prefetch hints 6; the
// store policy made no difference, and keeping the outputs L2-resident suits the consumer (the GEMM
// that reads the codes next). Plain loads, not volatile asm: the compiler may schedule them freely
// (loop-invariant code motion needs that), and pdl_wait()'s memory clobber still keeps them after
// the wait. The input never aliases an output (the API contract), so the non-coherent path is safe.
__device__ __forceinline__ uint4 ld_input_v4(const void* p) { return __ldg(static_cast<const uint4*>(p)); }
__device__ __forceinline__ uint32_t ld_u32(const void* p) { return __ldg(static_cast<const unsigned int*>(p)); }
__device__ __forceinline__ uint16_t ld_u16(const void* p) { return __ldg(static_cast<const unsigned short*>(p)); }
__device__ __forceinline__ void st_global_v2(void* p, uint32_t a, uint32_t b) {
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(a), "r"(b) : "memory");
}
__device__ __forceinline__ void st_global_v4(void* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d)
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
      const uint4 q = ld_input_v4(p + 16 * v);
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

// Zero the padding of a swizzled scale buffer, grid-stride over `thread` / `nthreads`:
//  (a) rows [rows, padded_rows): every 4-column group of such a row is one aligned 4-byte word in
//      both swizzled layouts (k % 4 is the innermost index), written with one 32-bit store;
//  (b) columns [sf_cols, padded_cols) of rows [0, rows): at most 3 bytes per row, byte stores
//      (the other bytes of those words are scale bytes written by the quantize threads).
// (a) uses 32-bit index math whenever its count fits (always, short of rows of ~2^30 elements).
__device__ __forceinline__ void zero_scale_padding(const ScaleGeometry& g, uint8_t* scales, int64_t thread,
                                                   int64_t nthreads) {
  if (g.layout == ScaleLayout::kLinear) return;
  const uint64_t col_groups = uint64_t(g.padded_cols / 4);
  const uint64_t n_a = uint64_t(g.padded_rows - g.rows) * col_groups;
  auto word = [&](uint64_t r, uint64_t kg) {
    const uint64_t off = sf_offset_u(g.layout, uint64_t(g.rows) + r, kg * 4, uint64_t(g.padded_cols));
    *reinterpret_cast<uint32_t*>(scales + off) = 0u;
  };
  if (n_a + uint64_t(nthreads) < (uint64_t(1) << 32)) {
    const uint32_t cg = uint32_t(col_groups);
    for (uint32_t i = uint32_t(thread); i < uint32_t(n_a); i += uint32_t(nthreads)) {
      const uint32_t r = i / cg;
      word(r, i - r * cg);
    }
  } else {
    for (uint64_t i = uint64_t(thread); i < n_a; i += uint64_t(nthreads)) word(i / col_groups, i % col_groups);
  }
  const uint32_t col_pad = uint32_t(g.padded_cols - g.sf_cols);  // 0..3
  if (col_pad == 0) return;
  const uint64_t n_b = uint64_t(g.rows) * col_pad;
  for (uint64_t i = uint64_t(thread); i < n_b; i += uint64_t(nthreads)) {
    const uint64_t m = i / col_pad, k = uint64_t(g.sf_cols) + (i - m * col_pad);
    scales[sf_offset_u(g.layout, m, k, uint64_t(g.padded_cols))] = 0;
  }
}

// Number of padding stores zero_scale_padding issues (for sizing a grid).
inline int64_t scale_padding_stores(const ScaleGeometry& g) {
  if (g.layout == ScaleLayout::kLinear) return 0;
  return (g.padded_rows - g.rows) * (g.padded_cols / 4) + g.rows * (g.padded_cols - g.sf_cols);
}

}  // namespace fp4kit::quant
