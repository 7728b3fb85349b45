// Choice between the two quantization kernels (vectorized_kernel.cuh, tma_kernel.cuh).
//
// Auto rule: the TMA kernel runs when it is eligible (16-byte aligned input base and row stride,
// 16-byte-aligned-compatible outputs, rows and cols < 2^31, cols a multiple of kTmaTileCols so no
// tile is partly empty) and rows * cols >= kTmaMinElements; otherwise the vectorized kernel.
//
// Forcing (tests, benchmarks): set_variant_override(), or the environment variable
// FP4KIT_QUANT_VARIANT=auto|vectorized|tma (read at every call; the override wins when it is not
// kAuto). A forced TMA request on an ineligible problem runs the vectorized kernel (the TMA kernel
// handles any cols, but it needs 16-byte aligned input and stride).
#pragma once

#include <cstdint>

#include "fp4kit/types.h"

namespace fp4kit::quant {

enum class Variant { kAuto, kVectorized, kTma };

const char* variant_name(Variant v);
// "auto" | "vectorized" | "tma" (also "vec"); false if unknown.
bool parse_variant(const char* s, Variant* out);

// Measured on the H100 (docs/QUANTIZE.md "Dispatch and the threshold", session 4, after the
// vectorized kernel went to 2 CTAs/SM and default-policy loads): the vectorized kernel is faster at
// every point up to 2^30 elements (16384x16384: 97 % of copy bandwidth vs 82 % for TMA, 65536x16384:
// 90 % vs 78 %); at 65536x32768 (2^31) TMA is 3 % faster (78 % vs 76 %).
inline constexpr int64_t kTmaMinElements = int64_t(1) << 31;

// Process-wide override (kAuto = none). Not synchronized with running calls: set it between calls.
void set_variant_override(Variant v);
// The override if set, else FP4KIT_QUANT_VARIANT, else kAuto.
Variant requested_variant();

struct VariantQuery {
  int64_t rows = 0, cols = 0;
  bool tma_eligible = false;  // alignment and size requirements of the TMA kernel hold
};
// kVectorized or kTma for this problem under the current request.
Variant choose_variant(const VariantQuery& q);

// The kernel that the last successful quantize_nvfp4 / quantize_mx call on this thread launched
// (kAuto before any call). For benchmarks: "which variant auto chose".
Variant last_variant();
void set_last_variant(Variant v);

}  // namespace fp4kit::quant
