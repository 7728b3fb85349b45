// The checkpoint quantizer's CPU path: NVFP4 with QuantNumerics::kModelOpt and linear scales,
// written for throughput (integer amax, one tight loop per 16-element block, rows split over
// threads) and bit-identical to reference::quantize_nvfp4 / reference::compute_global_scale with
// kModelOpt: the per-block scale is format::nvfp4_block_scale itself, the elements are
// format::float_to_e2m1_modelopt(x / divisor) with the same IEEE FP32 division, and the amax is a
// maximum, exact in any order (tests/safetensors/test_nvfp4_cpu.cpp checks all three).
#pragma once

#include <cstdint>

#include "fp4kit/types.h"
#include "reference/parallel.h"

namespace fp4kit::io {

// Which build of the kernels runs (x86-64): kAuto = AVX2 when the CPU has it, else the baseline
// (SSE2); kBaseline / kAvx2 force one (kAvx2 on a CPU without AVX2 runs the baseline). Both give the
// same bytes; the tests run both.
enum class CpuIsa { kAuto, kBaseline, kAvx2 };
bool cpu_has_avx2();
const char* cpu_isa_name(CpuIsa isa);  // "avx2" or "baseline": what `isa` runs on this CPU

// Worker threads for `requested`: requested > 0 as is, otherwise the hardware thread count (>= 1).
int resolve_threads(int requested);

// Calls body(begin, end) on disjoint chunks covering [0, n) with up to `threads` threads (the
// calling thread is one of them). Chunks hold at least `grain` indices.
// (The CPU reference's thread loop.)
template <class Body>
void parallel_rows(int64_t n, int64_t grain, int threads, const Body& body) {
  reference::detail::parallel_for(n, grain, threads, body);
}

// max |x| over `count` elements of a BF16/FP16/FP32 host tensor, NaNs ignored (0 when all are
// zero or NaN), exact: equals the out_amax of reference::compute_global_scale.
float cpu_amax(const void* data, DType dtype, int64_t count, int threads, CpuIsa isa = CpuIsa::kAuto);

// [rows, cols] BF16/FP16/FP32 (rows contiguous, cols % 16 == 0) -> codes [rows, cols/2] and
// linear E4M3 scales [rows, cols/16], kModelOpt with the decode global scale ws2. Equals
// reference::quantize_nvfp4 with numerics kModelOpt, scale_layout kLinear, global_scale &ws2.
void cpu_quantize_modelopt(const void* data, DType dtype, int64_t rows, int64_t cols, float ws2, uint8_t* codes,
                           uint8_t* scales, int threads, CpuIsa isa = CpuIsa::kAuto);

}  // namespace fp4kit::io

