// Device helpers shared by the MoE kernels (src/moe): 16-bit element access in 16-byte vectors,
// the contract's SwiGLU, the exact NVFP4 quantize-and-decode of one 16-element block (kExact recipe of
// format/block_recipes.h, the same functions the CPU reference calls), warp-level utilities.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "format/block_recipes.h"
#include "format/e2m1.h"
#include "format/e4m3.h"
#include "fp4kit/types.h"
#include "gemm/sm90/pack_pair.cuh"
#include "quant/nvfp4_scale_dev.cuh"

namespace fp4kit::moe_impl {

inline constexpr unsigned kFullMask = 0xffffffffu;

// ---- 16-bit activations (kBF16: BF16, else FP16), as raw bits ------------------------------------
template <bool kBF16>
__device__ __forceinline__ float act_to_float(uint32_t bits16) {
  if constexpr (kBF16) {
    return __uint_as_float(bits16 << 16);  // exact
  } else {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits16)));  // exact
  }
}

// FP32 -> 16 bits, round to nearest even (the conversion the reference performs).
template <bool kBF16>
__device__ __forceinline__ uint32_t float_to_act(float f) {
  if constexpr (kBF16) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  } else {
    return __half_as_ushort(__float2half_rn(f));
  }
}

// 8 elements (one 16-byte vector) <-> floats. Element 2j is the low half of word j.
template <bool kBF16>
__device__ __forceinline__ void unpack8(const uint4& v, float* x) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    x[2 * j] = act_to_float<kBF16>(w[j] & 0xffffu);
    x[2 * j + 1] = act_to_float<kBF16>(w[j] >> 16);
  }
}

template <bool kBF16>
__device__ __forceinline__ uint4 pack8(const float* x) {
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) w[j] = float_to_act<kBF16>(x[2 * j]) | (float_to_act<kBF16>(x[2 * j + 1]) << 16);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// 16 elements at p (16-byte aligned).
template <bool kBF16>
__device__ __forceinline__ void load16(const void* p, float (&x)[16]) {
  const uint4* q = static_cast<const uint4*>(p);
  const uint4 a = q[0], b = q[1];
  unpack8<kBF16>(a, x);
  unpack8<kBF16>(b, x + 8);
}

template <bool kBF16>
__device__ __forceinline__ void store16(void* p, const float (&x)[16]) {
  uint4* q = static_cast<uint4*>(p);
  q[0] = pack8<kBF16>(x);
  q[1] = pack8<kBF16>(x + 8);
}

// ---- SwiGLU (docs/MOE.md, numerics step 3) ---------------------------------------------------------
// silu(g) * u exactly as the reference writes it: g / (1 + expf(-g)), then * u, IEEE round to
// nearest (expf is the accurate CUDA expf, not __expf). Shared by the pipeline's swiglu_kernel and
// the per-entry FC1 kernel.
__device__ __forceinline__ float swiglu(float gate, float up) {
  const float silu = __fdiv_rn(gate, __fadd_rn(1.0f, expf(-gate)));
  return __fmul_rn(silu, up);
}

// max.f32 (no .ftz whatever the nvcc flags): a NaN operand is ignored, as format::fmax_nan_ignoring;
// on the non-negative values of an amax the two are equal.
__device__ __forceinline__ float max_ignoring_nan(float a, float b) {
  float r;
  asm("max.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// ---- NVFP4 (kExact) quantize + exact decode of one block of 16 ------------------------------------
// The amax of a block spread over 16 / N aligned lanes kLaneStride apart, N elements each: each lane's
// max.f32 from +0 (NaNs ignored), then max.f32 of butterfly shuffles. (One redux.sync.max.u32 over the
// block's lanes instead, on the floats' bits, was bit-identical and 0-2 % slower on the H100's
// per-entry W4A4 MoE: ptxas serializes a redux whose member mask differs between lanes.)
template <int N, int kLaneStride>
__device__ __forceinline__ float block_amax_lanes(const float (&x)[N]) {
  static_assert(N == 1 || N == 2 || N == 4 || N == 8 || N == 16, "a power of two up to 16");
  static_assert(kLaneStride >= 1 && (16 / N) * kLaneStride <= 32, "the block's lanes lie in one warp");
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) amax = max_ignoring_nan(amax, format::abs_f(x[i]));
#pragma unroll
  for (int o = kLaneStride; o < (16 / N) * kLaneStride; o <<= 1)
    amax = max_ignoring_nan(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  return amax;
}

// x <- e2m1(encode(x * factor)) * sf for one element: float_to_e2m1 and e2m1_to_float, with the
// magnitude from format::e2m1_round_magnitude (the FPU's own rounding on the E2M1 grid) and the
// code's sign bit (y's, + for NaN) or'ed in: the same bits, fewer instructions, a shorter chain.
__device__ __forceinline__ float nvfp4_exact_element_roundtrip(float x, float factor, float sf) {
  const float y = format::mul_rn(x, factor);
  const uint32_t sign = format::is_nan(y) ? 0u : format::float_bits(y) & 0x80000000u;
  const float mag = format::e2m1_round_magnitude(format::abs_f(y));
  return __fmul_rn(format::bits_float(format::float_bits(mag) | sign), sf);
}

// The decoded scale byte as format::e4m3_to_float gives it (0x7F / 0xFF: its NaN, not the f16 one).
__device__ __forceinline__ float nvfp4_decoded_scale(uint32_t sf) {
  return (sf & 0x7fu) == 0x7fu ? format::e4m3_to_float(uint8_t(sf)) : quant::e4m3_decode_hw(sf);
}

// x[i] <- e2m1(code_i) * sf, where (sf, code_i) is what quantize_nvfp4 (kExact, global scale `gs`)
// produces for this block: amax over |x| ignoring NaNs, nvfp4_block_scale, nvfp4_encode_element.
// The product has at most 6 significant bits and lies in [2^-10, 2688] (or is 0), so it is exact in
// FP32, BF16 and FP16 (FP16's smallest normal is 2^-14).
// The block is spread over 16 / N aligned consecutive lanes of N elements each (every lane of the
// warp calls it; `gs` may differ between blocks). The amax is a max, so the values do not depend on
// N; smaller N shortens each thread's dependent chain (the kernels that call it are on the MoE's
// critical path).
// kLaneStride: the block's lanes are 16 / N lanes kLaneStride apart instead (e.g. the lanes of one
// mma.sync C column: N = 2, stride 4), aligned so that they differ only in those lane bits.
// The scale recipe runs as the quantization kernels run it (quant/nvfp4_scale_dev.cuh: hardware E4M3
// conversions, proven equal to format:: for every input; the terms of `gs` alone precomputed in `c`,
// so a caller can take the division 1/gs off its tail) and the amax is max.f32 of non-negative values
// (NaN-ignoring, as format::fmax_nan_ignoring): about half the SASS of the format:: calls, whose
// branchy conversions sat on the MoE epilogues' dependent chains (H200 session 21: the round trip was
// 2.5 us of per-entry kernel A at Mixtral-8x7B T = 1, 1792 CTAs). Bit-identical to the format:: recipe.
// kStepSum = false: each element through format::nvfp4_encode_element and e2m1_to_float instead (the
// same bits; kept where the step sum's registers — session 31's form of e2m1_round_magnitude, 20
// instructions against 8 now, not re-measured there — made a kernel spill: per-entry kernel A's
// expert slices).
template <int N, int kLaneStride = 1, bool kStepSum = true>
__device__ __forceinline__ void nvfp4_exact_roundtrip_lanes(float (&x)[N],
                                                            const quant::Nvfp4ScaleConst<QuantNumerics::kExact>& c) {
  const float amax = block_amax_lanes<N, kLaneStride>(x);
  const format::BlockScale bs = quant::nvfp4_block_scale_dev<QuantNumerics::kExact>(amax, c);
  const float sf = nvfp4_decoded_scale(bs.sf);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if constexpr (kStepSum) {
      x[i] = nvfp4_exact_element_roundtrip(x[i], bs.factor, sf);
    } else {
      const uint32_t code = format::nvfp4_encode_element(x[i], bs, QuantNumerics::kExact);
      x[i] = __fmul_rn(format::e2m1_to_float(code), sf);
    }
  }
}

template <int N, int kLaneStride = 1>
__device__ __forceinline__ void nvfp4_exact_roundtrip_lanes(float (&x)[N], float gs) {
  nvfp4_exact_roundtrip_lanes<N, kLaneStride>(x, quant::nvfp4_scale_const<QuantNumerics::kExact>(gs));
}

// The block factor of quant::nvfp4_block_scale_dev<kExact> for global scale gs and a nonzero block whose
// scale byte is b (< 0x80: the byte of a non-negative amax): min(1 / (E4M3(b) * (1/gs)), FLT_MAX), a
// NaN giving FLT_MAX. A kernel whose blocks share gs tabulates the 128 bytes once (one division per
// thread, off its tail) and its round trips look the factor up instead of dividing.
__device__ __forceinline__ float nvfp4_exact_factor_of_byte(uint32_t b, float gs) {
  return quant::nvfp4_exact_factor_dev(quant::e4m3_decode_hw(b), quant::nvfp4_scale_const<QuantNumerics::kExact>(gs).b);
}
constexpr int kNvfp4FactorTableSize = 128;

// nvfp4_exact_roundtrip_lanes with the factor from a table of nvfp4_exact_factor_of_byte (shared memory,
// kNvfp4FactorTableSize entries) for the same global scale (only c.a is read here).
// Bit-identical to the divided factor: the scale byte is the same, and so is its table entry.
template <int N, int kLaneStride = 1>
__device__ __forceinline__ void nvfp4_exact_roundtrip_lanes_table(
    float (&x)[N], const quant::Nvfp4ScaleConst<QuantNumerics::kExact>& c, const float* factor_table) {
  const float amax = block_amax_lanes<N, kLaneStride>(x);
  const uint32_t sf = quant::nvfp4_exact_scale_byte_dev(amax, c.a);
  const float factor = amax != 0.0f ? factor_table[sf & 0x7fu] : 0.0f;
  const float sfq = nvfp4_decoded_scale(sf);
#pragma unroll
  for (int i = 0; i < N; ++i) x[i] = nvfp4_exact_element_roundtrip(x[i], factor, sfq);
}

// 16 E2M1 codes (8 bytes, element 2j in the low nibble of byte j) times an E4M3 scale byte, stored as
// 16 consecutive 16-bit values of the activation type (gemm_impl::sm90::store_nvfp4x16: byte
// permutes and one HMUL2 per pair, the same bits as a float product rounded to 16 bits; ~45
// instructions for the 16 values instead of ~300 for a float decode per element).
template <bool kBF16>
__device__ __forceinline__ void nvfp4_decode16_store(uint2 codes, uint8_t sf_byte, void* dst) {
  gemm_impl::sm90::store_nvfp4x16<std::conditional_t<kBF16, __nv_bfloat16, __half>>(codes, sf_byte, dst);
}

// ---- finalize (docs/MOE.md, numerics step 6) --------------------------------------------------------
// Columns [col, col + 8) of token t: acc = +0; for each slot j in order whose row perm[t, j] >= 0:
// acc = acc + scales[t, j] * F2[row] (product and sum each rounded, no FMA, as the reference); returns
// the 8 values rounded to 16 bits. kBatch slots at a time: every index and row load of a batch is
// issued before the first is used (one slot after the other cost two dependent L2 round trips per
// slot: ~7 us at T = 8, k = 8 on an H100); the sum still runs in j order. kCoherent: F2 was written
// during this launch (the fused-decode kernel): L2 loads. route(j, row, w) gives slot j's row
// (< 0: none) and final scale: from global memory (finalize_vector) or a staged copy.
template <bool kBF16, int kBatch, bool kCoherent, class Route>
__device__ __forceinline__ uint4 finalize_vector_routed(const uint16_t* f2, int64_t hidden, int top_k, int64_t col,
                                                        Route route) {
  float acc[8];
#pragma unroll
  for (int q = 0; q < 8; ++q) acc[q] = 0.0f;
  for (int j0 = 0; j0 < top_k; j0 += kBatch) {
    int row[kBatch];
    float w[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int j = j0 + b;
      row[b] = -1;
      w[b] = 0.0f;
      if (j < top_k) route(j, row[b], w[b]);
    }
    uint4 v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const uint4* src = reinterpret_cast<const uint4*>(f2 + int64_t(row[b]) * hidden + col);
      v[b] = row[b] < 0 ? make_uint4(0, 0, 0, 0) : kCoherent ? __ldcg(src) : *src;
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (row[b] < 0) continue;
      float x[8];
      unpack8<kBF16>(v[b], x);
#pragma unroll
      for (int q = 0; q < 8; ++q) acc[q] = __fadd_rn(acc[q], __fmul_rn(w[b], x[q]));
    }
  }
  return pack8<kBF16>(acc);
}

template <bool kBF16, int kBatch, bool kCoherent>
__device__ __forceinline__ uint4 finalize_vector(const uint16_t* f2, int64_t hidden, const int32_t* perm,
                                                 const float* scales, int top_k, int64_t t, int64_t col) {
  return finalize_vector_routed<kBF16, kBatch, kCoherent>(f2, hidden, top_k, col, [&](int j, int& row, float& w) {
    row = __ldg(perm + t * top_k + j);
    w = __ldg(scales + t * top_k + j);
  });
}

// q = idx / d, r = idx % d for non-negative operands, in 32 bits when both fit (a 64-bit division
// costs several times more, and the elementwise kernels do one per 16-byte vector).
__device__ __forceinline__ void divmod_nonneg(int64_t idx, int64_t d, int64_t& q, int64_t& r) {
  if (((idx | d) >> 32) == 0) {
    const uint32_t qq = uint32_t(idx) / uint32_t(d);
    q = qq;
    r = idx - int64_t(qq) * d;
  } else {
    q = idx / d;
    r = idx - q * d;
  }
}

// ---- warp helpers ------------------------------------------------------------------------------------
__device__ __forceinline__ unsigned lanemask_lt() {
  unsigned m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

__device__ __forceinline__ unsigned long long warp_max_u64(unsigned long long v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long w = __shfl_xor_sync(kFullMask, v, o);
    v = w > v ? w : v;
  }
  return v;
}

__device__ __forceinline__ float warp_max_f32(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

__device__ __forceinline__ double warp_sum_f64(double v) {
  // Butterfly: every lane ends with the same value, and the order of the additions is fixed.
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

}  // namespace fp4kit::moe_impl
