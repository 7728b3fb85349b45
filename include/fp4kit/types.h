// fp4kit/types.h — element types, scale-factor layouts and quantization numerics.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp4kit {

// Element types of tensors that cross the API. Host-side 16-bit values are passed as their bit
// patterns (uint16_t); packed FP4 tensors are uint8 with two elements per byte.
enum class DType {
  kBF16,
  kFP16,
  kFP32,
  kE4M3,    // FP8 E4M3 ("e4m3fn": no Inf, 0x7F/0xFF = NaN, max 448)
  kE2M1x2,  // two FP4 E2M1 per byte: element 2j in bits 3:0, element 2j+1 in bits 7:4
  kUE8M0,   // power-of-two scale byte: 2^(code-127), 0xFF = NaN
};

const char* dtype_name(DType t);
// Size in bytes of one storage unit (kE2M1x2: one byte = two elements).
std::size_t dtype_size(DType t);

// The three block formats of the OCP/NVIDIA microscaling family.
enum class BlockFormat {
  kNVFP4,  // E2M1 elements, block 16 along K, E4M3 scale, FP32 global scale
  kMXFP4,  // E2M1 elements, block 32 along K, UE8M0 scale
  kMXFP8,  // E4M3 elements, block 32 along K, UE8M0 scale
};

const char* block_format_name(BlockFormat f);
inline constexpr int block_size(BlockFormat f) { return f == BlockFormat::kNVFP4 ? 16 : 32; }

// Scale-factor buffer layouts (NVFP4_SPEC.md §3). For a matrix of `rows` x `sf_cols` scales:
//  kSwizzled128x4: rows padded to 128, cols to 4; 512-byte atoms [32][4][4] (CUTLASS/cuBLASLt).
//  kSwizzled8x4:   rows padded to 8, cols to 4; 32-byte atoms of 8x4 row-major (trtllm-gen A operand).
//  kLinear:        plain row-major [rows, sf_cols], no padding (checkpoints).
enum class ScaleLayout { kSwizzled128x4, kSwizzled8x4, kLinear };

const char* scale_layout_name(ScaleLayout l);

// Numerics of the NVFP4 quantizer (docs/NUMERICS.md).
//  kExact:    IEEE FP32 arithmetic, FlashInfer's FLASHINFER_DISABLE_FP4_QUANT_FAST_MATH recipe
//             (spec §2.4). Bit-identical between CPU reference and GPU kernels.
//  kFast:     FlashInfer's default recipe (spec §2.3/§2.11): reciprocals by rcp.approx.ftz.f32 and
//             flush-to-zero multiplies on the GPU; the CPU emulates rcp.approx with a correctly
//             rounded reciprocal, which may differ by one ulp (see docs/NUMERICS.md).
//  kModelOpt: NVIDIA ModelOpt's PyTorch export recipe; the global scale is the *decode* scale
//             weight_scale_2 = amax / 2688 (not the encode scale 2688 / amax).
enum class QuantNumerics { kExact, kFast, kModelOpt };

const char* quant_numerics_name(QuantNumerics n);

}  // namespace fp4kit
