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

// BF16: codes decode to e2m1 * 2^-126 (fragment_bits.h).
template <>
struct FragmentDecode<__nv_bfloat16> {
  // Pair p of word w (p = 0..3): the two elements a_{2p} (low half) and a_{2p+1} (high half).
  template <int P>
  static __device__ __forceinline__ uint32_t codes(uint32_t w) {
    return bf16_pair_bits<P>(w);
  }
  // Prepacked scale byte b (in byte S of `word`) -> {s, s} with s = sf * 2^119.
  template <int S>
  static __device__ __forceinline__ uint32_t scale(uint32_t word) {
    const uint32_t b2 = __byte_perm(word, 0u, 0x4040u | (S << 8) | S);  // [b, 0, b, 0]
    return b2 * 16u + 0x70007000u;
  }
  static __device__ __forceinline__ uint32_t mul(uint32_t a, uint32_t b) {
    __nv_bfloat162 r = __hmul2(*reinterpret_cast<__nv_bfloat162*>(&a), *reinterpret_cast<__nv_bfloat162*>(&b));
    return *reinterpret_cast<uint32_t*>(&r);
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
  static __device__ __forceinline__ uint32_t scale(uint32_t word) {
    const uint32_t b2 = __byte_perm(word, 0u, 0x4040u | (S << 8) | S);
    return b2 << 7;  // sf * 2^7
  }
  static __device__ __forceinline__ uint32_t mul(uint32_t a, uint32_t b) {
    __half2 r = __hmul2(*reinterpret_cast<__half2*>(&a), *reinterpret_cast<__half2*>(&b));
    return *reinterpret_cast<uint32_t*>(&r);
  }
};

// Decodes word w (one k16 step) with its scale words into the four A-fragment registers.
// lo_scales holds row g's scale bytes for steps 0..3, hi_scales row g+8's.
template <typename T, int S>
__device__ __forceinline__ void decode_step(uint32_t w, uint32_t lo_scales, uint32_t hi_scales, uint32_t (&a)[4]) {
  using D = FragmentDecode<T>;
  const uint32_t slo = D::template scale<S>(lo_scales);
  const uint32_t shi = D::template scale<S>(hi_scales);
  a[0] = D::mul(D::template codes<0>(w), slo);  // row g,   k 2c..2c+1
  a[1] = D::mul(D::template codes<1>(w), shi);  // row g+8, k 2c..2c+1
  a[2] = D::mul(D::template codes<2>(w), slo);  // row g,   k 2c+8..2c+9
  a[3] = D::mul(D::template codes<3>(w), shi);  // row g+8, k 2c+8..2c+9
}

// A whole prepacked chunk (16 code bytes and the 8 scale bytes of a lane) -> the A fragments of its
// four k16 steps.
template <typename T>
__device__ __forceinline__ void decode_chunk(uint4 w, uint2 sc, uint32_t (&a)[4][4]) {
  decode_step<T, 0>(w.x, sc.x, sc.y, a[0]);
  decode_step<T, 1>(w.y, sc.x, sc.y, a[1]);
  decode_step<T, 2>(w.z, sc.x, sc.y, a[2]);
  decode_step<T, 3>(w.w, sc.x, sc.y, a[3]);
}

}  // namespace fp4kit::gemm_impl::sm90
