// Eight E2M1 codes of one 32-bit word (element i in bits 4i..4i+3) -> four packed 16-bit pairs of
// their exact values (element 2j in the low half of word j), BF16 or FP16, by byte permutes (host +
// device). About 20 integer instructions for eight values on the GPU, against ~36 per pair for a
// float decode and a narrowing (e2m1_to_float, pack): the NVFP4 dequantize kernel's path, shared.
// tests/format/e2m1x8_test.cpp checks every code in every position against format::e2m1_to_float.
#pragma once

#include <cstdint>

#include "format/host_device.h"

namespace fp4kit::format {

// PRMT in its default mode: result byte n is byte (s >> 4n) & 7 of {y, x} (x bytes 0..3, y 4..7).
// Every selector used here has bit 3 of each nibble clear (the device's sign-replicate mode).
FP4KIT_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t xy = (uint64_t(y) << 32) | x;
  uint32_t r = 0;
  for (int n = 0; n < 4; ++n) r |= uint32_t((xy >> (8 * ((s >> (4 * n)) & 7u))) & 0xffu) << (8 * n);
  return r;
#endif
}

// Byte c (0..3) of each of w0..w3, as bytes 0..3 of one word (three permutes): a fragment's bytes
// that sit one per word (W4A4's A in B-fragment order) gathered for one e2m1x8 decode.
FP4KIT_HD uint32_t gather_byte(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, uint32_t c) {
  const uint32_t sel = c | ((c + 4u) << 4);  // {x.b[c], y.b[c], x.b0, x.b0}
  return byte_perm(byte_perm(w0, w1, sel), byte_perm(w2, w3, sel), 0x5410u);
}

// The signs: word j takes those of codes 2j (bit 8j+3 of w) and 2j+1 (bit 8j+7) at bits 15 and 31.
// Byte j of w << 4 has the first at its bit 7, byte j of w the second.
FP4KIT_HD void e2m1x8_signs(uint32_t w, uint32_t (&out)[4]) {
  const uint32_t w4 = w << 4;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t t = byte_perm(w, w4, 0x0400u | (uint32_t(j) << 12) | (uint32_t(4 + j) << 4));  // b1 = w4.b[j], b3 = w.b[j]
    out[j] |= t & 0x80008000u;
  }
}

// BF16: the bit patterns of the magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6} are 0x0000, 0x3F00, 0x3F80,
// 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0; one permute looks up the low (high) bytes of four codes.
FP4KIT_HD void e2m1x8_to_bf16x2(uint32_t w, uint32_t (&out)[4]) {
  const uint32_t mag = w & 0x77777777u;  // selector nibbles 0..7
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t sel = mag >> (16 * h);
    const uint32_t lo = byte_perm(0xC0800000u, 0xC0804000u, sel);  // low bytes of codes 0..7
    const uint32_t hi = byte_perm(0x3F3F3F00u, 0x40404040u, sel);  // high bytes
    out[2 * h] = byte_perm(lo, hi, 0x5140u);                        // {lo0, hi0, lo1, hi1}
    out[2 * h + 1] = byte_perm(lo, hi, 0x7362u);                    // {lo2, hi2, lo3, hi3}
  }
  e2m1x8_signs(w, out);
}

// FP16: the magnitudes are 0x0000, 0x3800, 0x3C00, 0x3E00, 0x4000, 0x4200, 0x4400, 0x4600 — zero low
// bytes, so one permute per four codes and one per word.
FP4KIT_HD void e2m1x8_to_f16x2(uint32_t w, uint32_t (&out)[4]) {
  const uint32_t mag = w & 0x77777777u;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t hi = byte_perm(0x3E3C3800u, 0x46444240u, mag >> (16 * h));  // high bytes
    out[2 * h] = byte_perm(0u, hi, 0x5040u);                                    // {0, hi0, 0, hi1}
    out[2 * h + 1] = byte_perm(0u, hi, 0x7060u);                                // {0, hi2, 0, hi3}
  }
  e2m1x8_signs(w, out);
}

}  // namespace fp4kit::format
