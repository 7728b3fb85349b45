// Helpers of the reference tests, written independently of src/format/ and src/reference/: value
// tables, nearest-value encoders, the view/transpose definition of the swizzled scale layouts.
// The only fp4kit pieces used are the public API and (to *produce* BF16/FP16 test inputs) the
// BF16/FP16 encoders, which tests/format/ checks against ml_dtypes.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "fp4kit/layout.h"
#include "fp4kit/types.h"
#include "format/float16.h"

namespace reftest {

using fp4kit::DType;
using fp4kit::ScaleLayout;

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---- E2M1 ----
inline const float kE2M1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
inline double e2m1_value(uint32_t code) { return (code & 8) ? -double(kE2M1[code & 7]) : double(kE2M1[code & 7]); }

// Round |y| to the E2M1 grid with the midpoint table {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5}:
// below a midpoint -> the lower value, above -> the upper, exactly on it -> the even code.
inline uint32_t e2m1_rne_midpoints(float y) {
  static const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  if (std::isnan(y)) return 0;  // fp4kit: every NaN -> +0
  const float a = std::fabs(y);
  uint32_t code = 7;
  for (uint32_t i = 0; i < 7; ++i) {
    if (a < mid[i]) { code = i; break; }
    if (a == mid[i]) { code = (i % 2 == 0) ? i : i + 1; break; }
  }
  return (std::signbit(y) ? 8u : 0u) | code;
}

// ---- E4M3 ----
inline double e4m3_value(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  double v;
  if (e == 15 && m == 7) return NAN;
  if (e == 0) v = std::ldexp(double(m), -9);
  else v = std::ldexp(1.0 + m / 8.0, e - 7);
  return (b & 0x80) ? -v : v;
}

// Nearest of the 127 non-negative finite E4M3 values, ties to the even code; above 448 -> 448
// (satfinite); NaN -> 0x7F; the sign is the input's sign bit (so -0 and tiny negatives -> 0x80).
inline uint8_t e4m3_nearest(float x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const double a = std::fabs(double(x));
  if (std::isinf(a)) return sign | 0x7E;
  int best = 0;
  double best_d = INFINITY;
  for (int c = 0; c <= 0x7E; ++c) {
    const double d = std::fabs(a - e4m3_value(uint8_t(c)));  // exact: both fit in a double's 53 bits
    if (d < best_d || (d == best_d && (c % 2 == 0))) {
      best = c;
      best_d = d;
    }
  }
  return uint8_t(sign | best);
}

// ---- BF16 / FP16 decode (independent) ----
inline float bf16_value(uint16_t b) { return float_of(uint32_t(b) << 16); }
inline float fp16_value(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31) v = m ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp(double(m), -24);
  else v = std::ldexp(1.0 + m / 1024.0, e - 15);
  return float((h & 0x8000) ? -v : v);
}

// ---- tensors of any input dtype ----
struct HostTensor {
  DType dtype = DType::kFP32;
  int64_t rows = 0, cols = 0, stride = 0;
  std::vector<uint16_t> h;  // BF16/FP16 bits
  std::vector<float> f;     // FP32 values
  const void* data() const { return dtype == DType::kFP32 ? static_cast<const void*>(f.data()) : h.data(); }
  // The value the quantizer sees, as FP32 (exact).
  float at(int64_t r, int64_t c) const {
    const int64_t i = r * stride + c;
    if (dtype == DType::kFP32) return f[size_t(i)];
    return dtype == DType::kBF16 ? bf16_value(h[size_t(i)]) : fp16_value(h[size_t(i)]);
  }
};

// values [rows, cols] -> a tensor of `dtype` with row stride `stride` (padding filled with junk).
inline HostTensor make_tensor(DType dtype, int64_t rows, int64_t cols, int64_t stride, const std::vector<float>& v) {
  HostTensor t;
  t.dtype = dtype;
  t.rows = rows;
  t.cols = cols;
  t.stride = stride;
  const size_t n = size_t(rows * stride);
  if (dtype == DType::kFP32) t.f.assign(n, 12345.0f);
  else t.h.assign(n, 0x7777);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float x = v[size_t(r * cols + c)];
      const size_t i = size_t(r * stride + c);
      if (dtype == DType::kFP32) t.f[i] = x;
      else if (dtype == DType::kBF16) t.h[i] = fp4kit::format::float_to_bf16(x);
      else t.h[i] = fp4kit::format::float_to_fp16(x);
    }
  }
  return t;
}

// ---- scale layouts by their tensor definition (NVFP4_SPEC.md §3.2/§3.3) ----
// linear [rows, sf_cols] -> the padded buffer of `layout`, by "pad to [Mp, Kp], view, transpose,
// flatten" written out as index arithmetic on the view's coordinates. Padding is T(0).
template <class T>
std::vector<T> swizzle_by_view(const std::vector<T>& lin, int64_t rows, int64_t sf_cols, ScaleLayout layout) {
  if (layout == ScaleLayout::kLinear) return lin;
  const int64_t R = layout == ScaleLayout::kSwizzled128x4 ? 128 : 8;
  const int64_t Mp = (rows + R - 1) / R * R, Kp = (sf_cols + 3) / 4 * 4;
  std::vector<T> padded(size_t(Mp * Kp), T(0));
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t k = 0; k < sf_cols; ++k) padded[size_t(m * Kp + k)] = lin[size_t(m * sf_cols + k)];
  std::vector<T> out(size_t(Mp * Kp), T(0));
  if (R == 128) {
    // view(Mp/128, 4, 32, Kp/4, 4) -> transpose(1, 3) -> [Mp/128, Kp/4, 32, 4, 4] -> flatten
    for (int64_t i0 = 0; i0 < Mp / 128; ++i0)
      for (int64_t i1 = 0; i1 < 4; ++i1)
        for (int64_t i2 = 0; i2 < 32; ++i2)
          for (int64_t i3 = 0; i3 < Kp / 4; ++i3)
            for (int64_t i4 = 0; i4 < 4; ++i4) {
              const int64_t src = (i0 * 128 + i1 * 32 + i2) * Kp + (i3 * 4 + i4);
              const int64_t dst = (((i0 * (Kp / 4) + i3) * 32 + i2) * 4 + i1) * 4 + i4;
              out[size_t(dst)] = padded[size_t(src)];
            }
  } else {
    // view(Mp/8, 8, Kp/4, 4) -> transpose(1, 2) -> [Mp/8, Kp/4, 8, 4] -> flatten
    for (int64_t i0 = 0; i0 < Mp / 8; ++i0)
      for (int64_t i1 = 0; i1 < 8; ++i1)
        for (int64_t i2 = 0; i2 < Kp / 4; ++i2)
          for (int64_t i3 = 0; i3 < 4; ++i3) {
            const int64_t src = (i0 * 8 + i1) * Kp + (i2 * 4 + i3);
            const int64_t dst = ((i0 * (Kp / 4) + i2) * 8 + i1) * 4 + i3;
            out[size_t(dst)] = padded[size_t(src)];
          }
  }
  return out;
}

// Where the view puts logical scale (m, k): swizzle the positions 1..rows*sf_cols themselves.
inline std::vector<int64_t> view_positions(int64_t rows, int64_t sf_cols, ScaleLayout layout) {
  std::vector<int64_t> ids(static_cast<size_t>(rows * sf_cols));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(i) + 1;
  const std::vector<int64_t> placed = swizzle_by_view(ids, rows, sf_cols, layout);
  std::vector<int64_t> where(ids.size(), -1);
  for (size_t dst = 0; dst < placed.size(); ++dst)
    if (placed[dst] != 0) where[size_t(placed[dst] - 1)] = int64_t(dst);
  return where;  // where[m * sf_cols + k] = byte offset
}

// The inverse: a buffer of `layout` -> linear [rows, sf_cols], read through the view.
inline std::vector<uint8_t> unswizzle_by_view(const std::vector<uint8_t>& buf, int64_t rows, int64_t sf_cols,
                                              ScaleLayout layout) {
  const std::vector<int64_t> where = view_positions(rows, sf_cols, layout);
  std::vector<uint8_t> lin(where.size());
  for (size_t i = 0; i < where.size(); ++i) lin[i] = buf[size_t(where[i])];
  return lin;
}

// ---- NVFP4 decode by the definition ----
// Element (r, c) of an NVFP4 matrix with codes [rows, cols/2] and LINEAR scales [rows, cols/16].
inline double nvfp4_value(const std::vector<uint8_t>& codes, const std::vector<uint8_t>& lin_scales, int64_t cols,
                          int64_t r, int64_t c) {
  const uint8_t byte = codes[size_t(r * (cols / 2) + c / 2)];
  const uint32_t code = (c % 2 == 0) ? (byte & 15u) : (byte >> 4);
  return e2m1_value(code) * e4m3_value(lin_scales[size_t(r * (cols / 16) + c / 16)]);
}

// Nearest BF16 (bf16 = true) or FP16 code to v, ties to the even code, overflow to Inf (the value
// after the largest finite one is taken as 2^128 resp. 2^16, as IEEE rounding does).
inline uint16_t nearest_16bit(double v, bool bf16) {
  const uint16_t inf = bf16 ? 0x7F80 : 0x7C00;
  if (std::isnan(v)) return bf16 ? 0x7FC0 : 0x7E00;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  auto val = [&](uint16_t c) -> double {
    if (c == inf) return bf16 ? std::ldexp(1.0, 128) : 65536.0;
    return bf16 ? double(bf16_value(c)) : double(fp16_value(c));
  };
  if (a >= val(inf)) return sign | inf;
  uint16_t lo = 0, hi = inf;  // val(lo) <= a < val(hi)
  while (hi - lo > 1) {
    const uint16_t mid = uint16_t((lo + hi) / 2);
    if (val(mid) <= a) lo = mid;
    else hi = mid;
  }
  const double dl = a - val(lo), dh = val(hi) - a;
  uint16_t c = dl < dh ? lo : (dh < dl ? hi : (lo % 2 == 0 ? lo : hi));
  if (c == inf) return sign | inf;
  return sign | c;
}

// Random floats of mixed magnitudes: N(0,1) * 2^U(lo, hi).
inline std::vector<float> random_values(std::mt19937& rng, size_t n, int lo = -8, int hi = 8) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ed(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = std::ldexp(nd(rng), ed(rng));
  return v;
}

}  // namespace reftest
