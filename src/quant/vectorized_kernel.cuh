// The vectorized quantization kernel (all problem sizes; the dispatcher picks it below the TMA
// threshold and whenever the TMA kernel's requirements are not met).
//
// Thread mapping: work is a flat list of "items" (16 consecutive elements of a row, see
// item_quantize.cuh), item f = row * (cols/16) + g, taken in *pairs* (2q, 2q+1). Thread t of the
// grid takes pairs t, t + T, t + 2T, ... (T = threads in the grid): a persistent, grid-stride loop
// that walks rows and columns together, so small-K problems pack many rows into one CTA and large-K
// rows are spread over CTAs. The two items of a pair are adjacent in the input row (or end one row
// and start the next) and adjacent in the outputs:
//   * input: 64 (BF16/FP16) or 128 (FP32) contiguous bytes per pair in 16-byte loads; the loads of
//     the next pair are issued before the current pair is converted (software pipelining); lanes
//     take consecutive pairs;
//   * codes: one 16-byte store per pair (FP4; 8 * f is 16-byte aligned for even f), two for MXFP8;
//     loads and stores use the default L2 policy (quant_common.cuh says why);
//   * NVFP4 scales: one 16-bit store (or two byte stores at a row end / atom edge);
//   * an MX block is exactly one pair: no shuffles, one scale computation per thread;
//   * row, column, addresses and scale offsets are computed once per pair; (row, g) advance
//     incrementally by (2T / G, 2T % G), no division in the loop.
// The per-tensor part of the NVFP4 recipe (nvfp4_scale_dev.cuh) is evaluated once per thread; the
// loop is instantiated twice (per-tensor / per-row global scale).
//
// After the main loop the grid zeroes the scale padding (swizzled layouts), then signals PDL
// dependents.
#pragma once

#include "quant/item_quantize.cuh"
#include "quant/quant_common.cuh"

namespace fp4kit::quant {

inline constexpr int kVecThreads = 256;
// Two CTAs per SM (<= 128 registers per thread). Measured on the H100 (docs/PERF.md, session 4;
// graph timing, M*K >= 2^24, geomean of copy bandwidth): with evict-first loads 1 CTA (the 162
// registers the exact path takes unbounded) 79 %, 3 CTAs (80 registers) 83 %, 4 CTAs (64, spills)
// 79 %; with __ldg loads 3 CTAs 85.5 %, 2 CTAs 89 %. Past two CTAs more resident warps buy no more
// bytes in flight (each thread keeps two pairs, 128 bytes, of loads outstanding) but cost registers.
inline constexpr int kVecMinBlocksPerSm = 2;

struct VecKernelParams {
  const uint8_t* input;
  int64_t input_row_bytes;  // row stride in bytes
  int64_t rows;
  int64_t items_per_row;  // G = cols / 16
  int64_t step_rows;      // (2 * gridDim.x * blockDim.x) / G
  int64_t step_items;     // (2 * gridDim.x * blockDim.x) % G
  ItemOutputs out;
};

// One pair: items A = (ra, ga) and B = (rb, gb); B is valid when rb < rows.
struct PairPos {
  int64_t ra, ga, rb, gb;
};

template <DType kIn, BlockFormat kFormat, QuantNumerics kMode, bool kVec, bool kPerRow>
__device__ __forceinline__ void quantize_pair(const VecKernelParams& p, const PairPos& q,
                                              const uint32_t (&wa)[InputType<kIn>::kWords],
                                              const uint32_t (&wb)[InputType<kIn>::kWords],
                                              const Nvfp4ScaleConst<kMode>& c0) {
  const ItemOutputs& o = p.out;
  const bool valid_b = q.rb < p.rows;
  float xa[16], xb[16];
  item_to_float<kIn>(wa, xa);
  item_to_float<kIn>(wb, xb);
  const float na = item_amax_nan_raw<kIn>(wa, xa), nb = item_amax_nan_raw<kIn>(wb, xb);
  // One rare-path test for the pair: a NaN anywhere in it.
  const bool any_nan = fmax_nan(na, nb) != fmax_nan(na, nb);
  // Flat item index of A (even): element offsets of both outputs are linear in it.
  const int64_t f = q.ra * p.items_per_row + q.ga;

  if constexpr (kFormat == BlockFormat::kNVFP4) {
    Nvfp4ScaleConst<kMode> ca = c0, cb = c0;
    if constexpr (kPerRow) {
      ca = nvfp4_scale_const<kMode>(__ldg(o.global_scale + q.ra));
      cb = q.rb == q.ra ? ca : nvfp4_scale_const<kMode>(valid_b ? __ldg(o.global_scale + q.rb) : 1.0f);
    }
    float amax_a = na, amax_b = nb;
    if (__builtin_expect(any_nan, 0)) {
      amax_a = item_amax_ignore_nan(xa);
      amax_b = item_amax_ignore_nan(xb);
    }
    const format::BlockScale bsa = nvfp4_block_scale_dev<kMode>(amax_a, ca);
    const format::BlockScale bsb = nvfp4_block_scale_dev<kMode>(amax_b, cb);
    constexpr bool kFtz = kMode == QuantNumerics::kFast;
    uint32_t a0, a1, b0, b1;
    if (kMode != QuantNumerics::kModelOpt && !any_nan && factor_is_fast<kFtz>(bsa.factor, na) &&
        factor_is_fast<kFtz>(bsb.factor, nb)) {
      encode16_e2m1_fast<kFtz>(xa, bsa.factor, a0, a1);
      encode16_e2m1_fast<kFtz>(xb, bsb.factor, b0, b1);
    } else {
      nvfp4_encode<kMode>(xa, bsa, na, a0, a1);
      nvfp4_encode<kMode>(xb, bsb, nb, b0, b1);
    }
    uint8_t* codes = o.elements + f * 8;
    if (kVec && valid_b) {
      st_global_v4(codes, a0, a1, b0, b1);
    } else {
      store_codes8(codes, a0, a1, kVec);
      if (valid_b) store_codes8(codes + 8, b0, b1, kVec);
    }
    const int64_t off_a = sf_offset(o.sg.layout, q.ra, q.ga, o.sg.padded_cols);
    const bool next = o.sg.layout == ScaleLayout::kLinear || (q.rb == q.ra && (q.ga & 3) != 3);
    if (valid_b && next && (off_a & 1) == 0) {
      asm volatile("st.global.u16 [%0], %1;" ::"l"(o.scales + off_a), "h"(uint16_t(bsa.sf | (bsb.sf << 8))) : "memory");
    } else {
      st_u8(o.scales + off_a, bsa.sf);
      if (valid_b) {
        const int64_t off_b = next ? off_a + 1 : sf_offset(o.sg.layout, q.rb, q.gb, o.sg.padded_cols);
        st_u8(o.scales + off_b, bsb.sf);
      }
    }
  } else {
    // G is even for MX: the pair is one block, always in one row and always complete.
    const float amax_nan = fmax_nan(na, nb);
    float amax = amax_nan;
    if (__builtin_expect(any_nan, 0)) amax = fmaxf(item_amax_ignore_nan(xa), item_amax_ignore_nan(xb));
    const MxScale m = mx_scale<kFormat, kMode>(amax, amax_nan);
    uint32_t a[4], b[4];
    mx_encode_half<kFormat, kMode>(xa, m, a);
    mx_encode_half<kFormat, kMode>(xb, m, b);
    if constexpr (kFormat == BlockFormat::kMXFP4) {
      uint8_t* codes = o.elements + f * 8;
      if (kVec) {
        st_global_v4(codes, a[0], a[1], b[0], b[1]);
      } else {
        store_codes8(codes, a[0], a[1], false);
        store_codes8(codes + 8, b[0], b[1], false);
      }
    } else {
      uint8_t* el = o.elements + f * 16;
      if (kVec) {
        st_global_v4(el, a[0], a[1], a[2], a[3]);
        st_global_v4(el + 16, b[0], b[1], b[2], b[3]);
      } else {
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          st_u8(el + i, (a[i / 4] >> (8 * (i % 4))) & 0xffu);
          st_u8(el + 16 + i, (b[i / 4] >> (8 * (i % 4))) & 0xffu);
        }
      }
    }
    st_u8(o.scales + sf_offset(o.sg.layout, q.ra, q.ga >> 1, o.sg.padded_cols), m.bs.sf);
  }
}

// Position of the pair starting at item (row, g), then (row, g) advanced by one grid stride.
__device__ __forceinline__ PairPos next_pair(const VecKernelParams& p, int64_t& row, int64_t& g) {
  PairPos q;
  q.ra = row;
  q.ga = g;
  const bool same_row = g + 1 < p.items_per_row;
  q.rb = same_row ? row : row + 1;
  q.gb = same_row ? g + 1 : 0;
  g += p.step_items;
  row += p.step_rows;
  if (g >= p.items_per_row) {
    g -= p.items_per_row;
    ++row;
  }
  return q;
}

template <DType kIn, bool kVec>
__device__ __forceinline__ void load_pair(const VecKernelParams& p, const PairPos& q,
                                          uint32_t (&wa)[InputType<kIn>::kWords],
                                          uint32_t (&wb)[InputType<kIn>::kWords]) {
  using T = InputType<kIn>;
  const uint8_t* pa = p.input + q.ra * p.input_row_bytes + q.ga * T::kItemBytes;
  const uint8_t* pb = q.gb != 0 ? pa + T::kItemBytes : p.input + q.rb * p.input_row_bytes;
  if (q.ra < p.rows) {
    load_item<kIn, kVec>(pa, wa);
  } else {
#pragma unroll
    for (int i = 0; i < T::kWords; ++i) wa[i] = 0;
  }
  if (q.rb < p.rows) {
    load_item<kIn, kVec>(pb, wb);
  } else {
#pragma unroll
    for (int i = 0; i < T::kWords; ++i) wb[i] = 0;
  }
}

// Software-pipelined: the loads of the next pair are issued before the current pair is
// converted, so every thread keeps 64 (16-bit) / 128 (FP32) bytes in flight while it computes.
template <DType kIn, BlockFormat kFormat, QuantNumerics kMode, bool kVec, bool kPerRow>
__device__ __forceinline__ void vectorized_loop(const VecKernelParams& p, int64_t row, int64_t g) {
  using T = InputType<kIn>;
  // Per-tensor part of the NVFP4 recipe, once (per-row: per pair, in quantize_pair).
  const Nvfp4ScaleConst<kMode> c0 =
      nvfp4_scale_const<kMode>((kFormat == BlockFormat::kNVFP4 && !kPerRow) ? __ldg(p.out.global_scale) : 1.0f);
  if constexpr (kIn == DType::kFP32) {
    // FP32 pairs are 128 bytes: enough in flight without pipelining (which would need ~128
    // registers per thread).
    while (row < p.rows) {
      const PairPos q = next_pair(p, row, g);
      uint32_t wa[T::kWords], wb[T::kWords];
      load_pair<kIn, kVec>(p, q, wa, wb);
      quantize_pair<kIn, kFormat, kMode, kVec, kPerRow>(p, q, wa, wb, c0);
    }
    return;
  }
  PairPos q = next_pair(p, row, g);
  uint32_t wa[T::kWords], wb[T::kWords];
  load_pair<kIn, kVec>(p, q, wa, wb);
  while (q.ra < p.rows) {
    const PairPos qn = next_pair(p, row, g);
    uint32_t na[T::kWords], nb[T::kWords];
    load_pair<kIn, kVec>(p, qn, na, nb);
    quantize_pair<kIn, kFormat, kMode, kVec, kPerRow>(p, q, wa, wb, c0);
    q = qn;
#pragma unroll
    for (int i = 0; i < T::kWords; ++i) {
      wa[i] = na[i];
      wb[i] = nb[i];
    }
  }
}

template <DType kIn, BlockFormat kFormat, QuantNumerics kMode, bool kVec>
__global__ void __launch_bounds__(kVecThreads, kVecMinBlocksPerSm) quantize_vectorized_kernel(const VecKernelParams p) {
  pdl_begin_persistent();
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t first = 2 * tid;  // flat index of the first item of this thread's first pair
  const int64_t row = first / p.items_per_row;
  const int64_t g = first - row * p.items_per_row;
  if constexpr (kFormat == BlockFormat::kNVFP4) {
    if (p.out.per_row_global_scale) {
      vectorized_loop<kIn, kFormat, kMode, kVec, true>(p, row, g);
    } else {
      vectorized_loop<kIn, kFormat, kMode, kVec, false>(p, row, g);
    }
  } else {
    vectorized_loop<kIn, kFormat, kMode, kVec, false>(p, row, g);
  }
  zero_scale_padding(p.out.sg, p.out.scales, tid, int64_t(gridDim.x) * blockDim.x);
}

}  // namespace fp4kit::quant
