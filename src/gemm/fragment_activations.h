// Activations in B-fragment order, for the dp decode kernels with 9..32 tokens.
//
// mma.m16n8k16's B operand wants lane 4g + c to hold token g's elements k = 16s + 2c + {0, 1} and
// 16s + 2c + 8 + {0, 1} of step s: in a row-major A[M, K] those are 32-bit words 16 bytes apart,
// so a warp gathers a chunk's B fragments with 8 LDG.32 per 8-token tile, each touching 8 token
// rows. With 16 tokens that saturates L1 (ncu, H100 session 5: 84 % L1/TEX, 34 % DRAM). This
// layout stores each lane's fragments contiguously, so a lane reads a chunk with two 128-bit loads
// and a warp's load is 512 contiguous bytes:
//
//   [token tile t = ceil(M/8)][k chunk j = ceil(K/64)][lane 4g + c][word w = 2s + h]
//   word (s, h) holds A[8t + g][64j + 16s + 8h + 2c] (low half) and the next element (high half).
//
// Tokens >= M and k >= K are zero. The arrangement is a plain copy (no rounding), written by a
// small kernel (sm90/arrange_activations.cu) before the GEMM.
#pragma once

#include <cstdint>

#include "format/host_device.h"

namespace fp4kit::gemm_impl {

constexpr int kFragmentWordsPerLane = 8;  // 4 k16 steps x 2 halves, 32 bits each

struct FragmentActivationShape {
  int64_t token_tiles, k_chunks;
  FP4KIT_HD int64_t words() const { return token_tiles * k_chunks * 32 * kFragmentWordsPerLane; }
  // Bytes, rounded up to 256 so that following workspace regions stay aligned.
  FP4KIT_HD int64_t bytes() const { return (words() * 4 + 255) / 256 * 256; }
};

FP4KIT_HD FragmentActivationShape fragment_activation_shape(int64_t m, int64_t k) {
  return FragmentActivationShape{(m + 7) / 8, (k + 63) / 64};
}

// Index (in 32-bit words) of word w of lane `lane` of chunk j of token tile t.
FP4KIT_HD int64_t fragment_activation_word(const FragmentActivationShape& s, int64_t t, int64_t j, int lane, int w) {
  return ((t * s.k_chunks + j) * 32 + lane) * kFragmentWordsPerLane + w;
}

// Token row and first k of word w of lane `lane` in chunk j of token tile t.
FP4KIT_HD int64_t fragment_activation_token(int64_t t, int lane) { return 8 * t + (lane >> 2); }
FP4KIT_HD int64_t fragment_activation_k(int64_t j, int lane, int w) {
  return 64 * j + 16 * (w >> 1) + 8 * (w & 1) + 2 * (lane & 3);
}

}  // namespace fp4kit::gemm_impl
