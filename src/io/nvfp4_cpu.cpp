// The checkpoint quantizer's CPU path (see nvfp4_cpu.h): kModelOpt NVFP4, linear scales.
//
// Each row is done in groups of 64 blocks of 16 elements, in three passes (quantize_row):
//   1. block amaxes, as integer maxima over the magnitude bits with NaNs mapped to 0 — for
//      non-negative IEEE values integer order is value order, so this is exactly the reference's
//      fmaxf-style maximum from +0 (and the 16-bit inputs convert to FP32 exactly);
//   2. per block, format::nvfp4_block_scale (the recipe the reference and the GPU kernels share),
//      in a scalar loop with independent iterations;
//   3. per block, 16 IEEE FP32 divisions x / divisor and the ModelOpt E2M1 coding
//      (format::float_to_e2m1_modelopt's thresholds), on 8-lane vectors, packed two codes a byte.
// The vectors are GNU vector extensions; on x86-64 the kernels are built twice, for the baseline
// (SSE2) and for AVX2, chosen at run time (CpuIsa). Division, comparisons and bit operations are
// exact, and no FMA is enabled (nothing to contract), so both builds give the reference's bytes
// (tests/safetensors/test_nvfp4_cpu.cpp runs both). The tensor amax (cpu_amax) is the same integer
// maximum.
#include "io/nvfp4_cpu.h"

#include <cstring>

#include "format/block_recipes.h"
#include "format/e2m1.h"
#include "format/float16.h"
#include "format/host_device.h"

// The vector types below are internal (every helper is inlined), so the note that passing 32-byte
// vectors without AVX changes the ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

// Helpers are always inlined, so each build (baseline, AVX2) gets its own instruction selection.
#define FP4KIT_IO_INLINE __attribute__((always_inline)) inline

#if defined(__x86_64__)
#define FP4KIT_IO_HAVE_AVX2 1
#define FP4KIT_IO_AVX2 __attribute__((target("avx2")))
#else
#define FP4KIT_IO_HAVE_AVX2 0
#endif

namespace fp4kit::io {

namespace {

constexpr QuantNumerics kMode = QuantNumerics::kModelOpt;

// GNU vector extensions: 8 lanes of 32 bits (two SSE registers, or one AVX2 register in the avx2
// clone). Arithmetic and comparisons are lane-wise IEEE operations; a comparison gives -1 / 0.
typedef float f32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));
typedef uint32_t u32x8 __attribute__((vector_size(32)));
typedef uint16_t u16x8 __attribute__((vector_size(16)));
typedef uint8_t u8x8 __attribute__((vector_size(8)));
typedef uint8_t u8x32 __attribute__((vector_size(32)));

FP4KIT_IO_INLINE f32x8 as_f32(const u32x8& v) { return (f32x8)v; }  // GNU vector casts reinterpret the bits
FP4KIT_IO_INLINE u32x8 as_u32(const f32x8& v) { return (u32x8)v; }

// max |x| over 16 values given as magnitude bits (sign cleared, NaN already mapped to 0): the
// integer maximum, which for non-negative IEEE values is the value maximum.
FP4KIT_IO_INLINE uint32_t hmax(const u32x8& a, const u32x8& b) {
  u32x8 m = a > b ? a : b;
  u32x8 s = __builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3);
  m = m > s ? m : s;
  s = __builtin_shufflevector(m, m, 2, 3, 0, 1, 6, 7, 4, 5);
  m = m > s ? m : s;
  s = __builtin_shufflevector(m, m, 1, 0, 3, 2, 5, 4, 7, 6);
  m = m > s ? m : s;
  return m[0];
}

// Magnitude bits of FP32 lanes with NaN -> 0 (NaN: above the +Inf pattern).
FP4KIT_IO_INLINE u32x8 mag_no_nan(const u32x8& u) {
  const u32x8 a = u & 0x7fffffffu;
  return a > 0x7f800000u ? 0u : a;
}

// format::float_to_e2m1_modelopt on 8 lanes: sign bit iff y < 0, magnitude code by the round-to-
// nearest-even thresholds of format::e2m1_magnitude_code (NaN: all comparisons false -> 0).
FP4KIT_IO_INLINE i32x8 e2m1_modelopt8(const f32x8& y) {
  const f32x8 a = as_f32(as_u32(y) & 0x7fffffffu);  // |y|: same comparisons as (y < 0 ? -y : y)
  i32x8 m = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  return (-m) | ((y < 0.0f) & 8);
}

// Codes of one block: 16 FP32 values (lo = elements 0..7, hi = 8..15) divided by `divisor`
// -> 8 bytes, element 2j in the low nibble of byte j.
FP4KIT_IO_INLINE void encode_block(const f32x8& lo, const f32x8& hi, float divisor, uint8_t* codes) {
  const i32x8 c0 = e2m1_modelopt8(lo / divisor);
  const i32x8 c1 = e2m1_modelopt8(hi / divisor);
  const i32x8 even = __builtin_shufflevector(c0, c1, 0, 2, 4, 6, 8, 10, 12, 14);
  const i32x8 odd = __builtin_shufflevector(c0, c1, 1, 3, 5, 7, 9, 11, 13, 15);
  const i32x8 bytes = even | (odd << 4);  // one code byte in the low 8 bits of each lane
  const u8x32 b = (u8x32)bytes;
  const u8x8 packed = __builtin_shufflevector(b, b, 0, 4, 8, 12, 16, 20, 24, 28);  // little-endian lanes
  std::memcpy(codes, &packed, 8);
}

FP4KIT_IO_INLINE u32x8 widen(const u16x8& h) { return __builtin_convertvector(h, u32x8); }

// The 16 values of block `b` of a row as FP32 bit patterns (exact conversions).
struct LoadBf16 {
  const uint16_t* x;
  FP4KIT_IO_INLINE void operator()(int64_t b, u32x8* lo, u32x8* hi) const {
    u16x8 h0, h1;
    std::memcpy(&h0, x + b * 16, 16);
    std::memcpy(&h1, x + b * 16 + 8, 16);
    *lo = widen(h0) << 16;
    *hi = widen(h1) << 16;
  }
};
struct LoadFp16 {
  const uint16_t* x;
  FP4KIT_IO_INLINE void operator()(int64_t b, u32x8* lo, u32x8* hi) const {
    float f[16];
    for (int j = 0; j < 16; ++j) f[j] = format::fp16_to_float(x[b * 16 + j]);
    std::memcpy(lo, f, 32);
    std::memcpy(hi, f + 8, 32);
  }
};
struct LoadFp32 {
  const float* x;
  FP4KIT_IO_INLINE void operator()(int64_t b, u32x8* lo, u32x8* hi) const {
    std::memcpy(lo, x + b * 16, 32);
    std::memcpy(hi, x + b * 16 + 8, 32);
  }
};

// Block amaxes of blocks b..b+7 -> out[0..7]: a transposing max-reduction of the 8 blocks'
// lane-wise maxima (14 two-input shuffles instead of 8 horizontal reductions).
template <class Load>
FP4KIT_IO_INLINE void amax8(const Load& load, int64_t b, float* out) {
  u32x8 m[8];
  for (int k = 0; k < 8; ++k) {
    u32x8 lo, hi;
    load(b + k, &lo, &hi);
    lo = mag_no_nan(lo);
    hi = mag_no_nan(hi);
    m[k] = lo > hi ? lo : hi;
  }
  u32x8 p[4], q[2];
  for (int k = 0; k < 4; ++k) {  // lanes 0-3: partial maxima of block 2k, lanes 4-7: of block 2k+1
    const u32x8 x = __builtin_shufflevector(m[2 * k], m[2 * k + 1], 0, 1, 2, 3, 8, 9, 10, 11);
    const u32x8 y = __builtin_shufflevector(m[2 * k], m[2 * k + 1], 4, 5, 6, 7, 12, 13, 14, 15);
    p[k] = x > y ? x : y;
  }
  for (int k = 0; k < 2; ++k) {  // lane pairs: blocks 4k, 4k+2, 4k+1, 4k+3
    const u32x8 x = __builtin_shufflevector(p[2 * k], p[2 * k + 1], 0, 1, 8, 9, 4, 5, 12, 13);
    const u32x8 y = __builtin_shufflevector(p[2 * k], p[2 * k + 1], 2, 3, 10, 11, 6, 7, 14, 15);
    q[k] = x > y ? x : y;
  }
  const u32x8 x = __builtin_shufflevector(q[0], q[1], 0, 8, 2, 10, 4, 12, 6, 14);
  const u32x8 y = __builtin_shufflevector(q[0], q[1], 1, 9, 3, 11, 5, 13, 7, 15);
  u32x8 r = x > y ? x : y;                                // lanes: blocks 0, 4, 2, 6, 1, 5, 3, 7
  r = __builtin_shufflevector(r, r, 0, 4, 2, 6, 1, 5, 3, 7);  // the permutation is its own inverse
  std::memcpy(out, &r, 32);
}

// One row in three passes over groups of up to kGroup blocks, so that the scalar block-scale
// recipe (a division and the E4M3 rounding: a long dependency chain) runs in an independent loop
// the CPU overlaps, between two vector loops: block amaxes; scales and divisors
// (format::nvfp4_block_scale); codes.
template <class Load>
FP4KIT_IO_INLINE void quantize_row(const Load& load, int64_t nb, float S, uint8_t* rc, uint8_t* rs) {
  constexpr int64_t kGroup = 64;
  float amax[kGroup], divisor[kGroup];
  for (int64_t g = 0; g < nb; g += kGroup) {
    const int64_t n = std::min(kGroup, nb - g);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) amax8(load, g + i, amax + i);
    for (; i < n; ++i) {
      u32x8 lo, hi;
      load(g + i, &lo, &hi);
      amax[i] = format::bits_float(hmax(mag_no_nan(lo), mag_no_nan(hi)));
    }
    for (int64_t i = 0; i < n; ++i) {
      const format::BlockScale bs = format::nvfp4_block_scale(amax[i], S, kMode);
      rs[g + i] = bs.sf;
      divisor[i] = bs.factor;
    }
    for (int64_t i = 0; i < n; ++i) {
      u32x8 lo, hi;
      load(g + i, &lo, &hi);
      encode_block(as_f32(lo), as_f32(hi), divisor[i], rc + (g + i) * 8);
    }
  }
}

template <class Load, class T>
FP4KIT_IO_INLINE void rows(const T* in, int64_t r0, int64_t r1, int64_t cols, float S, uint8_t* codes,
                           uint8_t* scales) {
  for (int64_t r = r0; r < r1; ++r)
    quantize_row(Load{in + r * cols}, cols / 16, S, codes + r * (cols / 2), scales + r * (cols / 16));
}

// Maximum magnitude bits (NaN excluded) over elements [begin, end) of 16-bit floats whose +Inf
// magnitude pattern is `inf`, or of FP32 values.
FP4KIT_IO_INLINE uint32_t max_mag16(const uint16_t* x, int64_t begin, int64_t end, uint16_t inf) {
  u32x8 m = {};
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    u16x8 h;
    std::memcpy(&h, x + i, 16);
    u32x8 a = widen(h) & 0x7fffu;
    a = a > uint32_t(inf) ? 0u : a;
    m = a > m ? a : m;
  }
  uint32_t r = hmax(m, m);
  for (; i < end; ++i) {
    const uint32_t a = x[i] & 0x7fffu;
    if (a <= inf && a > r) r = a;
  }
  return r;
}

FP4KIT_IO_INLINE uint32_t max_mag32(const uint32_t* x, int64_t begin, int64_t end) {
  u32x8 m = {};
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    u32x8 u;
    std::memcpy(&u, x + i, 32);
    const u32x8 a = mag_no_nan(u);
    m = a > m ? a : m;
  }
  uint32_t r = hmax(m, m);
  for (; i < end; ++i) {
    const uint32_t a = x[i] & 0x7fffffffu;
    if (a <= 0x7f800000u && a > r) r = a;
  }
  return r;
}

// The entry points of one build: quantize rows [r0, r1), or the amax bits of elements [b, e).
void rows_base(DType dt, const void* in, int64_t r0, int64_t r1, int64_t cols, float S, uint8_t* codes,
               uint8_t* scales) {
  switch (dt) {
    case DType::kBF16: rows<LoadBf16>(static_cast<const uint16_t*>(in), r0, r1, cols, S, codes, scales); break;
    case DType::kFP16: rows<LoadFp16>(static_cast<const uint16_t*>(in), r0, r1, cols, S, codes, scales); break;
    default: rows<LoadFp32>(static_cast<const float*>(in), r0, r1, cols, S, codes, scales); break;
  }
}
uint32_t max_mag_base(DType dt, const void* in, int64_t b, int64_t e) {
  switch (dt) {
    case DType::kBF16: return max_mag16(static_cast<const uint16_t*>(in), b, e, 0x7f80u);
    case DType::kFP16: return max_mag16(static_cast<const uint16_t*>(in), b, e, 0x7c00u);
    default: return max_mag32(static_cast<const uint32_t*>(in), b, e);
  }
}
#if FP4KIT_IO_HAVE_AVX2
FP4KIT_IO_AVX2 void rows_avx2(DType dt, const void* in, int64_t r0, int64_t r1, int64_t cols, float S,
                              uint8_t* codes, uint8_t* scales) {
  switch (dt) {
    case DType::kBF16: rows<LoadBf16>(static_cast<const uint16_t*>(in), r0, r1, cols, S, codes, scales); break;
    case DType::kFP16: rows<LoadFp16>(static_cast<const uint16_t*>(in), r0, r1, cols, S, codes, scales); break;
    default: rows<LoadFp32>(static_cast<const float*>(in), r0, r1, cols, S, codes, scales); break;
  }
}
FP4KIT_IO_AVX2 uint32_t max_mag_avx2(DType dt, const void* in, int64_t b, int64_t e) {
  switch (dt) {
    case DType::kBF16: return max_mag16(static_cast<const uint16_t*>(in), b, e, 0x7f80u);
    case DType::kFP16: return max_mag16(static_cast<const uint16_t*>(in), b, e, 0x7c00u);
    default: return max_mag32(static_cast<const uint32_t*>(in), b, e);
  }
}
#endif

bool use_avx2(CpuIsa isa) {
  if (isa == CpuIsa::kBaseline) return false;
  return cpu_has_avx2();  // kAuto and kAvx2 (kAvx2 without AVX2 runs the baseline)
}

}  // namespace

bool cpu_has_avx2() {
#if FP4KIT_IO_HAVE_AVX2
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

const char* cpu_isa_name(CpuIsa isa) { return use_avx2(isa) ? "avx2" : "baseline"; }

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : int(hw);
}

float cpu_amax(const void* data, DType dtype, int64_t count, int threads, CpuIsa isa) {
  constexpr int64_t kGrain = 1 << 20;  // elements per chunk
  const int64_t chunks = (count + kGrain - 1) / kGrain;
  const bool avx2 = use_avx2(isa);
  std::vector<uint32_t> part(size_t(std::max<int64_t>(chunks, 1)), 0u);
  parallel_rows(chunks, 1, threads, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t b = c * kGrain, e = std::min(count, b + kGrain);
#if FP4KIT_IO_HAVE_AVX2
      if (avx2) {
        part[size_t(c)] = max_mag_avx2(dtype, data, b, e);
        continue;
      }
#endif
      part[size_t(c)] = max_mag_base(dtype, data, b, e);
    }
  });
  uint32_t m = 0;
  for (uint32_t v : part) m = std::max(m, v);
  switch (dtype) {
    case DType::kBF16: return format::bits_float(m << 16);
    case DType::kFP16: return format::fp16_to_float(uint16_t(m));
    default: return format::bits_float(m);
  }
}

void cpu_quantize_modelopt(const void* data, DType dtype, int64_t rows, int64_t cols, float ws2, uint8_t* codes,
                           uint8_t* scales, int threads, CpuIsa isa) {
  // About 64K elements per chunk: big enough to amortize the hand-off, small enough to balance.
  const int64_t grain = cols >= 65536 ? 1 : 65536 / cols;
  const bool avx2 = use_avx2(isa);
  parallel_rows(rows, grain, threads, [&](int64_t r0, int64_t r1) {
#if FP4KIT_IO_HAVE_AVX2
    if (avx2) return rows_avx2(dtype, data, r0, r1, cols, ws2, codes, scales);
#endif
    rows_base(dtype, data, r0, r1, cols, ws2, codes, scales);
  });
}

}  // namespace fp4kit::io
