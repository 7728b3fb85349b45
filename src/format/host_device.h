// Marks functions usable from host and device code; the format headers compile with g++ alone.
#pragma once

#if defined(__CUDACC__)
#define FP4KIT_HD __host__ __device__ __forceinline__
#else
#define FP4KIT_HD inline
#endif

#include <cstdint>
#include <cstring>

namespace fp4kit::format {

FP4KIT_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

FP4KIT_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

FP4KIT_HD bool is_nan(float f) { return (float_bits(f) & 0x7fffffffu) > 0x7f800000u; }

}  // namespace fp4kit::format
