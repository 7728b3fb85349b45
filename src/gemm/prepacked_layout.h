// The prepacked NVFP4 weight layout shared by both GEMM families (docs/GEMM.md).
//
// Weights B[N, K] are cut into 16-row x 64-K chunks. Chunk (t, j) covers rows [16t, 16t+16) and
// K [64j, 64j+64): four k16 MMA steps s = 0..3. Its 32 lanes each own 16 code bytes — exactly the
// A-operand fragments of mma.m16n8k16 / wgmma (register A) for the four steps — so a warp fetches
// a chunk with one coalesced 128-bit load per lane:
//
//   lane = 4*g + c  holds rows g and g+8, and for step s the k offsets 16s + {2c, 2c+1, 2c+8, 2c+9}.
//   word s (32 bits) = the 4 bits of each fragment element a0..a7, placed (fragment_bits.h) so that
//   each pair p = (a_{2p}, a_{2p+1}) decodes to an MMA operand register in 1 to 3 instructions.
//
// Scales: 64 bytes per chunk, [g][h][s] (h = 0: row g, h = 1: row g+8). Lane (g, c) reads the 8
// bytes at g*8 (the four lanes of a quad read the same bytes). A scale byte is re-encoded:
//   byte = FP16 bits of (|sf| * 2^7) >> 7      ("UE5M3": no sign, FP16's 5-bit exponent)
// which decodes with one shift to FP16 (sf*2^7) or one shift+add to BF16 (sf*2^119), and every
// E4M3 value, subnormals included, becomes a normal number. Sign and zero are moved into the codes:
// a negative scale flips the sign bits of its 16 codes, a zero scale zeroes them (its byte then
// encodes 1.0). Decoding the code nibble with shifts gives e2m1*2^-14 (FP16) or e2m1*2^-126 (BF16),
// so every decoded weight equals w*sf*2^-7 exactly; the kernels multiply the FP32 accumulator by
// 2^7 before alpha.
//
// Buffer: codes  [Np/16][Kp/64][32 lanes][16 B]   then   scales [Np/16][Kp/64][64 B],
// Np = roundup(N, 64), Kp = roundup(K, 64); padding rows/columns are zero codes (contribute 0).
#pragma once

#include "format/e4m3.h"
#include "format/float16.h"
#include "format/host_device.h"
#include "format/scale_layout.h"
#include "gemm/fragment_bits.h"

namespace fp4kit::gemm_impl {

constexpr int kChunkRows = 16;
constexpr int kChunkK = 64;
constexpr int kChunkCodeBytes = 512;
constexpr int kChunkScaleBytes = 64;
constexpr int kRowPad = 64;
constexpr float kWeightDecodeScale = 128.0f;  // decoded weight = true weight / 2^7

struct PrepackedShape {
  int64_t n_pad, k_pad, row_tiles, k_chunks;
  FP4KIT_HD int64_t code_bytes() const { return n_pad * k_pad / 2; }
  FP4KIT_HD int64_t bytes() const { return code_bytes() + n_pad * k_pad / 16; }
};

FP4KIT_HD PrepackedShape prepacked_shape(int64_t n, int64_t k) {
  PrepackedShape s;
  s.n_pad = format::round_up(n, kRowPad);
  s.k_pad = format::round_up(k, kChunkK);
  s.row_tiles = s.n_pad / kChunkRows;
  s.k_chunks = s.k_pad / kChunkK;
  return s;
}


// Row (0..15 within the chunk) and k offset (0..63 within the chunk) of fragment element a_i of
// word s held by lane (g, c).
FP4KIT_HD int fragment_row(int lane, int i) { return (lane >> 2) + ((i >> 1) & 1) * 8; }
FP4KIT_HD int fragment_k(int lane, int s, int i) { return 16 * s + 2 * (lane & 3) + (i & 1) + (i >> 2) * 8; }

// Re-encoded scale byte for E4M3 byte `sf` (finite, sign and zero handled by the caller).
FP4KIT_HD uint8_t encode_prepacked_scale(uint8_t sf) {
  const float mag = format::e4m3_to_float(uint8_t(sf & 0x7f));
  const float v = mag == 0.0f ? 1.0f : mag;  // zero blocks: codes are zeroed, scale = 1.0
  return uint8_t(format::float_to_fp16(v * kWeightDecodeScale) >> 7);
}

// The value a prepacked scale byte stands for (sf), for tests.
FP4KIT_HD float decode_prepacked_scale(uint8_t b) {
  return format::fp16_to_float(uint16_t(uint16_t(b) << 7)) / kWeightDecodeScale;
}

// Source scale offset in the checkpoint buffer.
FP4KIT_HD int64_t source_scale_offset(int layout /*0 linear, 1 128x4*/, int64_t row, int64_t kb, int64_t sf_cols) {
  return layout == 0 ? row * sf_cols + kb : format::sf_offset_128x4(row, kb, format::round_up(sf_cols, 4));
}

// Builds lane `lane`'s 16 code bytes and the chunk's scale bytes g*8..g*8+7 for chunk (t, j).
// Returns false when a source scale is NaN. Host and device (the prepack kernel runs this per lane).
FP4KIT_HD bool prepack_lane(const uint8_t* codes, const uint8_t* scales, int scale_layout, int64_t n, int64_t k,
                            int64_t t, int64_t j, int lane, uint32_t out_words[4], uint8_t out_scales[8]) {
  const int64_t sf_cols = k / 16;
  bool ok = true;
  // Scale bytes for rows g, g+8 and the four k16 blocks of this chunk, plus per-block code masks.
  uint32_t flip[2][4], keep[2][4];
  for (int h = 0; h < 2; ++h) {
    for (int s = 0; s < 4; ++s) {
      const int64_t row = 16 * t + (lane >> 2) + 8 * h;
      const int64_t kb = 4 * j + s;
      uint8_t sf = 0;
      if (row < n && kb < sf_cols) sf = scales[source_scale_offset(scale_layout, row, kb, sf_cols)];
      if ((sf & 0x7f) == 0x7f) ok = false;  // NaN
      flip[h][s] = (sf & 0x80) ? 8u : 0u;
      keep[h][s] = (sf & 0x7f) ? 15u : 0u;
      out_scales[h * 4 + s] = encode_prepacked_scale(sf);
    }
  }
  for (int s = 0; s < 4; ++s) {
    uint32_t w = 0;
    for (int i = 0; i < 8; ++i) {
      const int r = fragment_row(lane, i);
      const int64_t row = 16 * t + r;
      const int64_t kk = 64 * j + fragment_k(lane, s, i);
      uint32_t nib = 0;
      if (row < n && kk < k) {
        const uint8_t byte = codes[row * (k / 2) + kk / 2];
        nib = (kk & 1) ? (byte >> 4) : (byte & 15u);
        const int h = r >= 8;
        nib = (nib ^ flip[h][s]) & keep[h][s];
      }
      w |= place_code(nib, i);
    }
    out_words[s] = w;
  }
  return ok;
}

}  // namespace fp4kit::gemm_impl
