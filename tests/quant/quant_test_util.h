// Helpers of the tests/quant GPU tests: device buffers poisoned with 0xAB plus an untouched tail,
// host input generators (random / boundary / zero / huge / NaN), and byte comparisons.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fp4kit/types.h"
#include "format/float16.h"
#include "quant/quant_dispatch.h"

namespace fp4kit::quant_test {

inline constexpr uint8_t kPoison = 0xAB;
inline constexpr size_t kTail = 64;  // poisoned bytes after every output region

#define QT_CUDA(expr) ASSERT_EQ(cudaSuccess, (expr)) << #expr << ": " << cudaGetErrorString(cudaGetLastError())

// A device allocation of `bytes` + kTail, optionally poisoned; the tail must stay kPoison.
class DevBuf {
 public:
  DevBuf() = default;
  explicit DevBuf(size_t bytes, bool poison = true) { alloc(bytes, poison); }
  ~DevBuf() {
    if (p_) cudaFree(p_);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  void alloc(size_t bytes, bool poison = true) {
    if (p_) cudaFree(p_);
    bytes_ = bytes;
    p_ = nullptr;
    if (cudaMalloc(&p_, bytes + kTail) != cudaSuccess) p_ = nullptr;
    if (p_ && poison) cudaMemset(p_, kPoison, bytes + kTail);
  }
  void poison() { cudaMemset(p_, kPoison, bytes_ + kTail); }
  uint8_t* get() const { return static_cast<uint8_t*>(p_); }
  size_t bytes() const { return bytes_; }
  void upload(const void* src, size_t n, size_t offset = 0) { cudaMemcpy(get() + offset, src, n, cudaMemcpyHostToDevice); }
  std::vector<uint8_t> download_all() const {  // bytes + tail
    std::vector<uint8_t> v(bytes_ + kTail);
    cudaMemcpy(v.data(), p_, v.size(), cudaMemcpyDeviceToHost);
    return v;
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Sets the kernel override for the lifetime of the object.
class ScopedVariant {
 public:
  explicit ScopedVariant(quant::Variant v) { quant::set_variant_override(v); }
  ~ScopedVariant() { quant::set_variant_override(quant::Variant::kAuto); }
};

enum class Pattern { kRandom, kBoundary, kZero, kHuge, kNaN };
inline const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::kRandom: return "random";
    case Pattern::kBoundary: return "boundary";
    case Pattern::kZero: return "zero";
    case Pattern::kHuge: return "huge";
    case Pattern::kNaN: return "nan";
  }
  return "?";
}

// Stores v as dtype t at element index i of a byte vector.
inline void put(std::vector<uint8_t>& buf, DType t, int64_t i, float v) {
  if (t == DType::kFP32) {
    std::memcpy(buf.data() + 4 * i, &v, 4);
  } else {
    const uint16_t h = t == DType::kBF16 ? format::float_to_bf16(v) : format::float_to_fp16(v);
    std::memcpy(buf.data() + 2 * i, &h, 2);
  }
}
inline float get(const std::vector<uint8_t>& buf, DType t, int64_t i) {
  if (t == DType::kFP32) {
    float v;
    std::memcpy(&v, buf.data() + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, buf.data() + 2 * i, 2);
  return t == DType::kBF16 ? format::bf16_to_float(h) : format::fp16_to_float(h);
}

inline float max_finite(DType t) { return t == DType::kFP16 ? 65504.0f : (t == DType::kBF16 ? 3.3895314e38f : 3.4028235e38f); }

// rows x stride elements of dtype t (elements beyond cols in a row are filled too: they must not
// influence the result). block = the format's block size (16 or 32) for per-block magnitudes.
inline std::vector<uint8_t> make_input(DType t, int64_t rows, int64_t cols, int64_t stride, Pattern pat, uint64_t seed,
                                       int block = 16) {
  std::vector<uint8_t> buf(size_t(rows * stride) * dtype_size(t));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ed(-12, 12);
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  // E2M1 tie points and grid points: with a block amax of 6 * 2^e, the block scale is about 2^e and
  // these land on or next to rounding boundaries after scaling.
  static const float kBoundary[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float fmax = max_finite(t);
  for (int64_t r = 0; r < rows; ++r) {
    float mag = std::ldexp(1.0f, ed(rng));
    for (int64_t c = 0; c < stride; ++c) {
      if (c % block == 0) mag = std::ldexp(1.0f, ed(rng));
      float v = 0.0f;
      switch (pat) {
        case Pattern::kRandom: v = nd(rng) * mag; break;
        case Pattern::kBoundary: {
          const float b = kBoundary[(c * 7 + r) % 14];
          const float ulp = std::ldexp(1.0f, -8 - int(ud(rng) * 3));
          const float j = (c % 3 == 0) ? 0.0f : (c % 3 == 1 ? ulp : -ulp);
          v = (b * (1.0f + j)) * mag * (ud(rng) < 0.5f ? -1.0f : 1.0f);
          if (c % block == 0) v = 6.0f * mag;  // pins the block amax
          break;
        }
        case Pattern::kZero: v = (c % 5 == 3) ? -0.0f : 0.0f; break;
        case Pattern::kHuge: {
          const float u = ud(rng);
          if (u < 0.02f) v = INFINITY;
          else if (u < 0.04f) v = -INFINITY;
          else if (u < 0.3f) v = fmax * (ud(rng) < 0.5f ? -1.0f : 1.0f);
          else if (u < 0.6f) v = nd(rng) * fmax * 0.25f;
          else v = nd(rng) * 1e-30f;  // tiny next to huge (FP16 flushes these to 0)
          break;
        }
        case Pattern::kNaN: {
          const float u = ud(rng);
          v = u < 0.05f ? NAN : (u < 0.1f ? -NAN : nd(rng) * mag);
          break;
        }
      }
      put(buf, t, r * stride + c, v);
    }
  }
  return buf;
}

// Encode global scale 2688 / amax of the given rows (amax over [0, cols) of each row), FLT_MAX / 1.0
// guards as the reference's compute_global_scale; per_row: one per row.
inline std::vector<float> encode_scales(const std::vector<uint8_t>& in, DType t, int64_t rows, int64_t cols,
                                        int64_t stride, bool per_row) {
  std::vector<float> amax(size_t(rows), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float v = std::fabs(get(in, t, r * stride + c));
      if (!std::isnan(v) && v > amax[size_t(r)]) amax[size_t(r)] = v;
    }
  auto gs = [](float a) {
    if (a == 0.0f) return 1.0f;
    const float g = 2688.0f / a;
    if (g > 3.4028235e38f) return 3.4028235e38f;
    return g == 0.0f ? 1.0f : g;
  };
  if (per_row) {
    std::vector<float> out(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) out[size_t(r)] = gs(amax[size_t(r)]);
    return out;
  }
  float m = 0.0f;
  for (float a : amax) m = a > m ? a : m;
  return {gs(m)};
}

// Compares the first n bytes of got with want, and that got's tail (after n) is all kPoison.
// Returns a failure message listing the first mismatches, or "".
inline std::string compare_bytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, size_t n,
                                 const char* what) {
  std::string msg;
  int64_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      if (bad < 8) msg += std::string(what) + "[" + std::to_string(i) + "] got " + std::to_string(got[i]) + " want " +
                          std::to_string(want[i]) + "; ";
      ++bad;
    }
  }
  for (size_t i = n; i < got.size(); ++i) {
    if (got[i] != kPoison) {
      msg += std::string(what) + ": tail byte " + std::to_string(i - n) + " overwritten; ";
      break;
    }
  }
  if (bad) msg += std::to_string(bad) + " of " + std::to_string(n) + " bytes differ";
  return msg;
}

}  // namespace fp4kit::quant_test
