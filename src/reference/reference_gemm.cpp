// CPU reference GEMM: D[m, n] = alpha * sum_k A[m, k] * B[n, k] (+ bias[n]).
//
// A (BF16/FP16, or NVFP4 codes + E4M3 scales) and B (NVFP4) are decoded exactly to double first
// (NVFP4: e2m1 * e4m3; every product of two decoded values is exact in double). Each output is
// the double sum of its products taken in k order (k = 0, 1, ...), then multiplied by alpha and
// increased by bias in double, then rounded once (RNE) to out_dtype. Global scales are not
// applied: they are part of alpha.
//
// Speed: B is packed into panels of kNr columns ([k][kNr] doubles) and each task computes a
// kMr x kNr tile with independent accumulators, so the inner loop has kMr*kNr independent
// k-ordered sums (no reassociation) and vectorizes across the panel columns.
#include <algorithm>
#include <new>
#include <string>
#include <vector>

#include "fp4kit/layout.h"
#include "fp4kit/reference.h"
#include "format/e2m1.h"
#include "format/e4m3.h"
#include "reference/checks.h"
#include "reference/parallel.h"
#include "reference/scale_offset.h"
#include "reference/tensor_io.h"

namespace fp4kit::reference {

using detail::ArgCheck;

namespace {

constexpr int64_t kMr = 4;  // rows of A per register tile
constexpr int64_t kNr = 4;  // columns of B per packed panel

// Row r of an NVFP4 matrix ([rows, k/2] codes, scales in `layout`) -> k doubles, exactly.
void decode_nvfp4_row(const uint8_t* codes, const uint8_t* scales, ScaleLayout layout, int64_t padded_cols,
                      int64_t r, int64_t k, double* out) {
  const uint8_t* row = codes + r * (k / 2);
  for (int64_t b = 0; b < k / 16; ++b) {
    const double s = format::e4m3_to_float(scales[detail::sf_offset(layout, r, b, padded_cols)]);
    for (int64_t i = b * 16; i < b * 16 + 16; ++i) {
      const uint8_t byte = row[i / 2];
      out[i] = double(format::e2m1_to_float((i & 1) ? format::e2m1_high(byte) : format::e2m1_low(byte))) * s;
    }
  }
}

}  // namespace

Status gemm(const GemmRefParams& p) {
  ArgCheck c("reference::gemm");
  const bool a_fp4 = p.a_dtype == DType::kE2M1x2;
  c.not_null(p.a, "a").not_null(p.b, "b").not_null(p.b_scales, "b_scales").not_null(p.d, "d");
  c.positive(p.m, "m").positive(p.n, "n").positive(p.k, "k").multiple_of(p.k, 16, "k", "NVFP4 block size");
  c.dtype_in(p.a_dtype, {DType::kBF16, DType::kFP16, DType::kE2M1x2}, "a");
  c.dtype_in(p.out_dtype, {DType::kBF16, DType::kFP16, DType::kFP32}, "out");
  if (c.ok() && a_fp4) {
    c.not_null(p.a_scales, "a_scales");
    c.require(p.lda == 0 || p.lda == p.k, StatusCode::kInvalidArgument,
              "lda (=" + std::to_string(p.lda) + ") must be 0 or k (=" + std::to_string(p.k) +
                  ") for NVFP4 A (codes are [m, k/2], rows contiguous)");
    detail::check_layout(c, p.a_scale_layout, "a_scale_layout");
  } else {
    detail::check_stride(c, p.lda, p.k, "lda");
  }
  detail::check_layout(c, p.b_scale_layout, "b_scale_layout");
  detail::check_stride(c, p.ldd, p.n, "ldd");
  const int64_t lda = detail::resolve_stride(p.lda, p.k);
  const int64_t ldd = detail::resolve_stride(p.ldd, p.n);
  c.size_fits(p.m, lda, a_fp4 ? 1 : 2, "a");
  c.size_fits(p.n, p.k, 1, "b");
  c.size_fits(p.m, ldd, int64_t(dtype_size(p.out_dtype)), "d");
  ScaleShape a_shape{0, 0}, b_shape{0, 0};
  if (a_fp4) detail::check_scale_shape(c, p.a_scale_layout, p.m, p.k / 16, "a_scales", &a_shape);
  detail::check_scale_shape(c, p.b_scale_layout, p.n, p.k / 16, "b_scales", &b_shape);
  // The decoded operands: (m rounded up to kMr) x k and (n rounded up to kNr) x k doubles.
  if (c.ok()) c.size_fits(p.m + kMr, p.k, 8, "decoded a").size_fits(p.n + kNr, p.k, 8, "decoded b");
  FP4KIT_RETURN_IF_ERROR(c.status());

  const int64_t M = p.m, N = p.n, K = p.k;
  const int64_t Mp = (M + kMr - 1) / kMr * kMr, Np = (N + kNr - 1) / kNr * kNr;
  std::vector<double> a, bp;
  try {
    a.assign(size_t(Mp * K), 0.0);   // row-major [Mp, K]; padding rows 0
    bp.assign(size_t(Np * K), 0.0);  // panels [Np/kNr][K][kNr]; padding columns 0
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kInternal, "reference::gemm: cannot allocate " +
                                             std::to_string((Mp + Np) * K * 8) + " bytes for the decoded operands");
  }

  // Decode A.
  const int64_t row_grain = K >= 8192 ? 1 : 8192 / K;
  detail::parallel_for(M, row_grain, [&](int64_t r0, int64_t r1) {
    std::vector<float> tmp(static_cast<size_t>(K));
    for (int64_t r = r0; r < r1; ++r) {
      double* out = a.data() + r * K;
      if (a_fp4) {
        decode_nvfp4_row(static_cast<const uint8_t*>(p.a), p.a_scales, p.a_scale_layout, a_shape.padded_cols, r, K,
                         out);
      } else {
        detail::load_row(p.a, p.a_dtype, r * lda, K, tmp.data());
        for (int64_t i = 0; i < K; ++i) out[i] = tmp[size_t(i)];
      }
    }
  });
  // Decode B into panels.
  detail::parallel_for(N, row_grain, [&](int64_t r0, int64_t r1) {
    std::vector<double> row(static_cast<size_t>(K));
    for (int64_t r = r0; r < r1; ++r) {
      decode_nvfp4_row(p.b, p.b_scales, p.b_scale_layout, b_shape.padded_cols, r, K, row.data());
      double* panel = bp.data() + (r / kNr) * K * kNr;
      for (int64_t i = 0; i < K; ++i) panel[i * kNr + r % kNr] = row[size_t(i)];
    }
  });

  const double alpha = p.alpha;
  // Tiles of kMr rows; a task of `tile_grain` tiles does about 2^21 multiply-adds.
  const int64_t tiles = Mp / kMr;
  const int64_t tile_grain = std::max<int64_t>(1, (int64_t(1) << 21) / (kMr * Np * K));
  detail::parallel_for(tiles, tile_grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t m0 = t * kMr;
      const double* a0 = a.data() + (m0 + 0) * K;
      const double* a1 = a.data() + (m0 + 1) * K;
      const double* a2 = a.data() + (m0 + 2) * K;
      const double* a3 = a.data() + (m0 + 3) * K;
      for (int64_t n0 = 0; n0 < Np; n0 += kNr) {
        const double* panel = bp.data() + (n0 / kNr) * K * kNr;
        double acc[kMr][kNr] = {};
        for (int64_t kk = 0; kk < K; ++kk) {
          const double* bk = panel + kk * kNr;
          const double av[kMr] = {a0[kk], a1[kk], a2[kk], a3[kk]};
          for (int64_t i = 0; i < kMr; ++i)
            for (int64_t j = 0; j < kNr; ++j) acc[i][j] += av[i] * bk[j];  // exact product, k-ordered sum
        }
        for (int64_t i = 0; i < kMr; ++i) {
          const int64_t mi = m0 + i;
          if (mi >= M) break;
          for (int64_t j = 0; j < kNr; ++j) {
            const int64_t nj = n0 + j;
            if (nj >= N) break;
            double v = acc[i][j] * alpha;
            if (p.bias) v += detail::load_scalar_as_double(p.bias, p.out_dtype, nj);
            if (p.d_f64) p.d_f64[mi * N + nj] = v;
            detail::store_double(p.d, p.out_dtype, mi * ldd + nj, v);
          }
        }
      }
    }
  });
  return Status::ok();
}

}  // namespace fp4kit::reference
