// Where the four bits of each E2M1 weight sit inside a prepacked code word, and the integer
// sequences that turn a word into MMA operand pairs. Host and device: the prepack, the GEMM kernels
// (sm90/fragment_decode.cuh) and the CPU tests all use these definitions.
//
// A code word holds the eight fragment elements a0..a7 of one k16 step (prepacked_layout.h). Pair
// p = (a_{2p}, a_{2p+1}) becomes one 32-bit operand register: a_{2p} in the low half, a_{2p+1} in
// the high half. Target encodings (exact; the scale multiply that follows restores the magnitude):
//   BF16: sign at bit 15, e1 e0 m at bits 8..6   -> e2m1 * 2^-126
//   FP16: sign at bit 15, e1 e0 m at bits 11..9  -> e2m1 * 2^-14
//
// The bits are not stored as nibbles. Each element's sign, e1, e0 and m bits are placed so that
// the BF16 decode costs 8 integer instructions per word instead of 15 for nibbles:
//   pair 0: stored in BF16 position                   -> 1 AND
//   pair 1: BF16 position rotated right by 13          -> rotate, AND
//   pair 2: BF16 position rotated right by 10          -> rotate, AND
//   pair 3: the eight bits left over (0,1,3,4 +16)     -> AND, multiply by 2^14+2^8+2^3 (three
//           shifts in one IMAD; the shifted copies never collide), AND
// (Found by exhaustive search: no placement gives all four pairs a single shift. FP16, the
// secondary operand type, pays about one extra instruction per pair.)
#pragma once

#include <cstdint>

#include "format/host_device.h"

namespace fp4kit::gemm_impl {

// Bit positions of the sign, e1, e0 and m bits (E2M1 nibble bits 3, 2, 1, 0) of the low element of
// pair p; the high element's bits are 16 positions higher (mod 32).
struct PairBitPositions {
  int bit[4];  // [0] sign, [1] e1, [2] e0, [3] m
};
FP4KIT_HD PairBitPositions pair_bit_positions(int p) {
  switch (p) {
    case 0: return {{15, 8, 7, 6}};
    case 1: return {{2, 27, 26, 25}};
    case 2: return {{5, 30, 29, 28}};
    default: return {{1, 0, 4, 3}};
  }
}

// Word bits holding E2M1 code `nib` (4 bits) as fragment element a_i (i = 0..7).
FP4KIT_HD uint32_t place_code(uint32_t nib, int i) {
  const PairBitPositions b = pair_bit_positions(i >> 1);
  const int shift = (i & 1) ? 16 : 0;
  uint32_t w = 0;
  for (int q = 0; q < 4; ++q)
    if ((nib >> (3 - q)) & 1u) w |= 1u << ((b.bit[q] + shift) & 31);
  return w;
}

// The E2M1 code of fragment element a_i in word w (the inverse of place_code).
FP4KIT_HD uint32_t extract_code(uint32_t w, int i) {
  const PairBitPositions b = pair_bit_positions(i >> 1);
  const int shift = (i & 1) ? 16 : 0;
  uint32_t nib = 0;
  for (int q = 0; q < 4; ++q) nib |= ((w >> ((b.bit[q] + shift) & 31)) & 1u) << (3 - q);
  return nib;
}

FP4KIT_HD uint32_t rotate_left(uint32_t w, int r) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_l(w, w, r);
#else
  return r == 0 ? w : (w << r) | (w >> (32 - r));
#endif
}

// Pair p of word w as two BF16 values e2m1 * 2^-126 (sign at 15 and 31, e1 e0 m at 8..6 and 24..22).
template <int P>
FP4KIT_HD uint32_t bf16_pair_bits(uint32_t w) {
  constexpr uint32_t kOut = 0x81C081C0u;
  if constexpr (P == 0) return w & kOut;
  else if constexpr (P == 1) return rotate_left(w, 13) & kOut;
  else if constexpr (P == 2) return rotate_left(w, 10) & kOut;
  else return ((w & 0x001B001Bu) * 0x4108u) & kOut;  // (1<<14) + (1<<8) + (1<<3)
}

// Pair p of word w as two FP16 values e2m1 * 2^-14 (sign at 15 and 31, e1 e0 m at 11..9 and 27..25).
template <int P>
FP4KIT_HD uint32_t fp16_pair_bits(uint32_t w) {
  constexpr uint32_t kOut = 0x8E008E00u;
  if constexpr (P == 0) return ((w & 0x81C081C0u) * 9u) & kOut;  // eem << 3, sign kept
  else if constexpr (P == 1) return ((rotate_left(w, 7) & 0x02070207u) * 0x240u) & kOut;
  else if constexpr (P == 2) return ((rotate_left(w, 4) & 0x02070207u) * 0x240u) & kOut;
  else  // sign and e1 with shifts 14 and 11 in one multiply; e0 and m with a shift of 6
    return (((w & 0x00030003u) * 0x4800u) & 0x88008800u) | ((w & 0x00180018u) << 6);
}

}  // namespace fp4kit::gemm_impl
