// Register-level decode of prepacked NVFP4 fragments into BF16/FP16 MMA operands
// (prepacked_layout.h explains the encoding). All results are exact.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "gemm/fragment_bits.h"

namespace fp4kit::gemm_impl::sm90 {


template <typename T>
struct FragmentDecode;

// Scales: the four scale bytes of a lane's row (one per k16 step) become two registers of two
// scales each, {s_0, s_1} and {s_2, s_3}; each multiply takes its scale from one half with the
// .H0_H0 / .H1_H1 operand selector of HMUL2 (ptxas folds __low2* / __high2* into it). Two
// instructions per two scales instead of two per scale: 8 fewer per chunk (57 instead of 65 with
// the code extraction), which matters because the tensor cores and this ALU work do not overlap on
// an SM sub-partition (docs/GEMM.md "Decode and wgmma do not overlap").

// BF16: codes decode to e2m1 * 2^-126 (fragment_bits.h).
template <>
struct FragmentDecode<__nv_bfloat16> {
  // Pair p of word w (p = 0..3): the two elements a_{2p} (low half) and a_{2p+1} (high half).
  template <int P>
  static __device__ __forceinline__ uint32_t codes(uint32_t w) {
    return bf16_pair_bits<P>(w);
  }
  // Prepacked scale bytes S and S+1 of `word` -> {s_S, s_{S+1}} with s = sf * 2^119.
  template <int S>
  static __device__ __forceinline__ uint32_t scale_pair(uint32_t word) {
    const uint32_t b2 = __byte_perm(word, 0u, 0x4040u | ((S + 1) << 8) | S);  // [b_S, 0, b_S+1, 0]
    return b2 * 16u + 0x70007000u;
  }
  // a * {s.h, s.h}, h = H (0: low half, 1: high half).
  template <int H>
  static __device__ __forceinline__ uint32_t mul(uint32_t a, uint32_t s) {
    const __nv_bfloat162 sv = *reinterpret_cast<const __nv_bfloat162*>(&s);
    const __nv_bfloat162 r =
        __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&a), H ? __high2bfloat162(sv) : __low2bfloat162(sv));
    return *reinterpret_cast<const uint32_t*>(&r);
  }
};

// FP16: codes decode to e2m1 * 2^-14 (fragment_bits.h).
template <>
struct FragmentDecode<__half> {
  template <int P>
  static __device__ __forceinline__ uint32_t codes(uint32_t w) {
    return fp16_pair_bits<P>(w);
  }
  template <int S>
  static __device__ __forceinline__ uint32_t scale_pair(uint32_t word) {
    const uint32_t b2 = __byte_perm(word, 0u, 0x4040u | ((S + 1) << 8) | S);
    return b2 << 7;  // sf * 2^7
  }
  template <int H>
  static __device__ __forceinline__ uint32_t mul(uint32_t a, uint32_t s) {
    const __half2 sv = *reinterpret_cast<const __half2*>(&s);
    const __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&a), H ? __high2half2(sv) : __low2half2(sv));
    return *reinterpret_cast<const uint32_t*>(&r);
  }
};

// Decodes word w (k16 step 2j + H) into the four A-fragment registers. lo holds row g's scales of
// steps 2j, 2j+1 ({s_2j, s_2j+1}), hi row g+8's.
template <typename T, int H>
__device__ __forceinline__ void decode_step(uint32_t w, uint32_t lo, uint32_t hi, uint32_t (&a)[4]) {
  using D = FragmentDecode<T>;
  a[0] = D::template mul<H>(D::template codes<0>(w), lo);  // row g,   k 2c..2c+1
  a[1] = D::template mul<H>(D::template codes<1>(w), hi);  // row g+8, k 2c..2c+1
  a[2] = D::template mul<H>(D::template codes<2>(w), lo);  // row g,   k 2c+8..2c+9
  a[3] = D::template mul<H>(D::template codes<3>(w), hi);  // row g+8, k 2c+8..2c+9
}

// A whole prepacked chunk (16 code bytes and the 8 scale bytes of a lane: sc.x row g's steps 0..3,
// sc.y row g+8's) -> the A fragments of its four k16 steps.
template <typename T>
__device__ __forceinline__ void decode_chunk(uint4 w, uint2 sc, uint32_t (&a)[4][4]) {
  using D = FragmentDecode<T>;
  const uint32_t lo01 = D::template scale_pair<0>(sc.x), hi01 = D::template scale_pair<0>(sc.y);
  const uint32_t lo23 = D::template scale_pair<2>(sc.x), hi23 = D::template scale_pair<2>(sc.y);
  decode_step<T, 0>(w.x, lo01, hi01, a[0]);
  decode_step<T, 1>(w.y, lo01, hi01, a[1]);
  decode_step<T, 0>(w.z, lo23, hi23, a[2]);
  decode_step<T, 1>(w.w, lo23, hi23, a[3]);
}

}  // namespace fp4kit::gemm_impl::sm90
