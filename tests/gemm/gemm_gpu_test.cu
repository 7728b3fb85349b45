// GEMM correctness on the GPU against the CPU reference (double accumulation over the decoded
// operands): every tactic, ragged shapes, fresh random data, poisoned outputs, determinism.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/device_buffer.h"
#include "common/gpu_test.h"
#include "format/e2m1.h"
#include "format/e4m3.h"
#include "format/float16.h"
#include "format/scale_layout.h"
#include "fp4kit/gemm.h"
#include "fp4kit/tune.h"
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "fp4kit/reference.h"
#include "gemm/tactics.h"

using namespace fp4kit;

namespace {

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x
#define FP4_OK(x)                                  \
  do {                                             \
    Status s_ = (x);                               \
    ASSERT_TRUE(s_.is_ok()) << s_.to_string();     \
  } while (0)

std::vector<uint16_t> random_16bit(int64_t count, DType t, std::mt19937& rng, float sigma) {
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<uint16_t> v(count);
  for (auto& x : v) {
    const float f = nd(rng);
    x = t == DType::kBF16 ? format::float_to_bf16(f) : format::float_to_fp16(f);
  }
  return v;
}

struct Quantized {
  std::vector<uint8_t> codes, scales;
  float gs;
};

Quantized quantize_cpu(const std::vector<uint16_t>& x, DType t, int64_t rows, int64_t cols, ScaleLayout layout) {
  Quantized q;
  GlobalScaleParams gp;
  gp.input = x.data();
  gp.input_dtype = t;
  gp.rows = rows;
  gp.cols = cols;
  gp.out_global_scale = &q.gs;
  EXPECT_TRUE(reference::compute_global_scale(gp).is_ok());
  q.codes.resize(rows * cols / 2);
  q.scales.resize(scale_buffer_bytes(BlockFormat::kNVFP4, layout, rows, cols));
  Nvfp4QuantizeParams p;
  p.input = x.data();
  p.input_dtype = t;
  p.rows = rows;
  p.cols = cols;
  p.global_scale = &q.gs;
  p.out_codes = q.codes.data();
  p.out_codes_bytes = int64_t(q.codes.size());
  p.out_scales = q.scales.data();
  p.out_scales_bytes = int64_t(q.scales.size());
  p.scale_layout = layout;
  Status s = reference::quantize_nvfp4(p);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return q;
}

// Uploads weights quantized with the linear scale layout and prepacks them into `packed`
// (prepacked_weight_bytes(n, k) bytes).
Status prepack_quantized(const Quantized& qb, int64_t n, int64_t k, DeviceBuffer<uint8_t>& packed) {
  DeviceBuffer<uint8_t> codes(qb.codes.size()), scales(qb.scales.size());
  codes.upload(qb.codes);
  scales.upload(qb.scales);
  WeightPrepackParams pp;
  pp.n = n, pp.k = k;
  pp.codes = codes.ptr;
  pp.scales = scales.ptr;
  pp.scale_layout = ScaleLayout::kLinear;
  pp.out = packed.ptr;
  pp.out_bytes = int64_t(packed.count);
  const Status s = prepack_weights(pp, nullptr);
  cudaDeviceSynchronize();  // before the staging buffers are freed
  return s;
}

double to_double(uint16_t v, DType t) {
  return t == DType::kBF16 ? format::bf16_to_float(v) : format::fp16_to_float(v);
}

struct Case {
  int64_t m, n, k;
  DType a_dtype, d_dtype;
  bool bias;
  int64_t lda_pad = 0;  // A rows are k + lda_pad elements apart, the gap filled with NaN (0xff codes)
};

// Runs every tactic that can implement the case (whose name starts with tactic_prefix, if given);
// returns the number of tactics run.
int run_case(const Case& c, uint32_t seed, const char* tactic_prefix = nullptr) {
  std::mt19937 rng(seed);
  const bool w4a4 = c.a_dtype == DType::kE2M1x2;
  const DType act16 = w4a4 ? DType::kBF16 : c.a_dtype;
  auto w = random_16bit(c.n * c.k, DType::kBF16, rng, 0.05f);
  auto a16 = random_16bit(c.m * c.k, act16, rng, 1.0f);
  Quantized qb = quantize_cpu(w, DType::kBF16, c.n, c.k, ScaleLayout::kLinear);
  Quantized qa;
  if (w4a4) qa = quantize_cpu(a16, DType::kBF16, c.m, c.k, ScaleLayout::kSwizzled128x4);
  const float alpha = w4a4 ? 1.0f / (qa.gs * qb.gs) : 1.0f / qb.gs;
  std::vector<uint16_t> bias(c.n);
  for (auto& b : bias) b = c.d_dtype == DType::kBF16 ? format::float_to_bf16(float(rng() % 200) / 100 - 1)
                                                        : format::float_to_fp16(float(rng() % 200) / 100 - 1);

  // CPU reference in double.
  std::vector<uint16_t> d_ref(c.m * c.n);
  std::vector<double> d_f64(c.m * c.n);
  reference::GemmRefParams rp;
  rp.m = c.m, rp.n = c.n, rp.k = c.k;
  rp.a_dtype = c.a_dtype;
  rp.a = w4a4 ? static_cast<const void*>(qa.codes.data()) : a16.data();
  rp.a_scales = w4a4 ? qa.scales.data() : nullptr;
  rp.a_scale_layout = ScaleLayout::kSwizzled128x4;
  rp.b = qb.codes.data();
  rp.b_scales = qb.scales.data();
  rp.b_scale_layout = ScaleLayout::kLinear;
  rp.alpha = alpha;
  rp.bias = c.bias ? bias.data() : nullptr;
  rp.out_dtype = c.d_dtype;
  rp.d = d_ref.data();
  rp.d_f64 = d_f64.data();
  Status rs = reference::gemm(rp);
  EXPECT_TRUE(rs.is_ok()) << rs.to_string();

  // GPU operands.
  const int64_t packed_bytes = prepacked_weight_bytes(c.n, c.k);
  DeviceBuffer<uint8_t> packed(packed_bytes);
  Status ps = prepack_quantized(qb, c.n, c.k, packed);
  EXPECT_TRUE(ps.is_ok()) << ps.to_string();

  DeviceBuffer<uint16_t> a_dev(w4a4 ? 1 : a16.size());
  DeviceBuffer<uint8_t> a_codes(w4a4 ? qa.codes.size() : 1), a_scales(w4a4 ? qa.scales.size() : 1);
  const int64_t lda = c.k + c.lda_pad;
  DeviceBuffer<uint8_t> a_codes_strided(w4a4 && c.lda_pad ? c.m * lda / 2 : 1);
  if (w4a4) {
    a_codes.upload(qa.codes);
    a_scales.upload(qa.scales);
    if (c.lda_pad) {
      std::vector<uint8_t> padded(size_t(c.m * lda / 2), uint8_t(0xff));
      for (int64_t r = 0; r < c.m; ++r)
        std::copy_n(qa.codes.begin() + r * c.k / 2, c.k / 2, padded.begin() + r * lda / 2);
      a_codes_strided.upload(padded);
    }
  } else if (c.lda_pad == 0) {
    a_dev.upload(a16);
  }
  DeviceBuffer<uint16_t> a_strided(c.lda_pad ? c.m * lda : 1);
  if (!w4a4 && c.lda_pad) {
    std::vector<uint16_t> padded(size_t(c.m * lda), uint16_t(0xffff));
    for (int64_t r = 0; r < c.m; ++r) std::copy_n(a16.begin() + r * c.k, c.k, padded.begin() + r * lda);
    a_strided.upload(padded);
  }
  DeviceBuffer<float> alpha_dev(1);
  alpha_dev.upload({alpha});
  DeviceBuffer<uint16_t> bias_dev(c.n);
  bias_dev.upload(bias);
  DeviceBuffer<uint16_t> d_dev(c.m * c.n);

  GemmParams gp;
  gp.m = c.m, gp.n = c.n, gp.k = c.k;
  gp.a_dtype = c.a_dtype;
  gp.a = w4a4 ? (c.lda_pad ? a_codes_strided.ptr : a_codes.ptr) : c.lda_pad ? static_cast<const void*>(a_strided.ptr) : a_dev.ptr;
  gp.lda = lda;
  gp.a_scales = w4a4 ? a_scales.ptr : nullptr;
  gp.b_prepacked = packed.ptr;
  gp.b_prepacked_bytes = packed_bytes;
  gp.alpha = alpha_dev.ptr;
  gp.bias = c.bias ? bias_dev.ptr : nullptr;
  gp.d = d_dev.ptr;
  gp.d_dtype = c.d_dtype;

  int ran = 0;
  for (const GemmTacticInfo& t : gemm_tactics()) {
    gp.tactic = t.id;
    if (tactic_prefix != nullptr && std::string(t.name).rfind(tactic_prefix, 0) != 0) continue;
    if (!gemm_tactic_can_implement(t.id, gp).is_ok()) continue;
    const size_t ws_bytes = gemm_workspace_bytes(gp);
    DeviceBuffer<uint8_t> ws(ws_bytes);
    std::vector<uint16_t> first;
    for (int rep = 0; rep < 3; ++rep) {
      gp.enable_pdl = rep == 2;  // programmatic dependent launch: same bits
      cudaMemset(d_dev.ptr, 0xff, c.m * c.n * 2);  // NaN poison
      Status s = gemm(gp, ws.ptr, ws_bytes, nullptr);
      EXPECT_TRUE(s.is_ok()) << t.name << ": " << s.to_string();
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << t.name;
      std::vector<uint16_t> d = d_dev.download();
      if (rep == 0) {
        double num = 0, den = 0;
        int64_t nonfinite = 0;
        for (int64_t i = 0; i < c.m * c.n; ++i) {
          const double got = to_double(d[i], c.d_dtype);
          if (!std::isfinite(got)) ++nonfinite;
          num += (got - d_f64[i]) * (got - d_f64[i]);
          den += d_f64[i] * d_f64[i];
        }
        const double rel = std::sqrt(num / std::max(den, 1e-300));
        EXPECT_EQ(nonfinite, 0) << t.name << " m=" << c.m << " n=" << c.n << " k=" << c.k;
        // The error is dominated by rounding the output to 16 bits (half an ulp is up to 2^-8 of
        // the value for BF16), so the aggregate bound needs enough outputs to be meaningful.
        const double bound = c.m * c.n >= 4096 ? 2e-3 : 4e-3;
        EXPECT_LE(rel, bound) << t.name << " m=" << c.m << " n=" << c.n << " k=" << c.k << " a="
                             << dtype_name(c.a_dtype);
        first = d;
      } else {
        EXPECT_EQ(std::memcmp(first.data(), d.data(), d.size() * 2), 0)
            << t.name << (gp.enable_pdl ? ": differs with enable_pdl" : ": not deterministic");
      }
    }
    ++ran;
  }
  EXPECT_GT(ran, 0) << "no tactic can run m=" << c.m << " n=" << c.n << " k=" << c.k;
  return ran;
}

}  // namespace

TEST(GemmGpu, W4A16RaggedAllTactics) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = std::random_device{}();
  int total = 0;
  for (int64_t m : {1, 3, 17, 100})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{100, 1040}, {300, 48}, {1, 4112}, {1000, 2064}, {260, 960}}) {
      total += run_case({m, n, k, DType::kBF16, DType::kBF16, m % 2 == 1}, seed++);
      if (HasFailure()) return;
    }
  total += run_case({5, 260, 528, DType::kFP16, DType::kFP16, true}, seed++);
  // Strided A (lda > k): every tactic, the fragment-order arrangement included, reads rows at lda.
  total += run_case({13, 200, 1040, DType::kBF16, DType::kBF16, true, 24}, seed++);
  total += run_case({29, 64, 80, DType::kFP16, DType::kFP16, false, 8}, seed++);
  // The fragment-order tiles read row-major A through their shared-memory rings (decode_host.cu
  // ring_a) where warps per row block x row tiles >= 4 (the cases above: K = 2064, 4 warps, both tiles;
  // K = 1040, 2 warps, the 32-row tiles; K = 960, one warp, arranged A) — a partial token tile (rows
  // past M zero-filled), K % 64 == 32 (the last chunk's pieces past K zero-filled), strided A.
  total += run_case({13, 1040, 4128, DType::kBF16, DType::kBF16, true, 24}, seed++);
  total += run_case({6, 260, 4160, DType::kFP16, DType::kFP16, false}, seed++);
  // 513 16-row blocks of K = 65 chunks: 4 warps per row block on the 16-row tiles, 8 on the 32-row
  // ones (rings on both), a last CTA with one row block.
  total += run_case({7, 8208, 4160, DType::kBF16, DType::kBF16, true}, seed++);
  // 20 tokens, K = 65 chunks, 8 warps per row block: the 24-token tile's ring with its third token
  // tile partly live (the configuration its rule takes).
  total += run_case({20, 260, 4160, DType::kBF16, DType::kBF16, true}, seed++);
  EXPECT_GT(total, 0);
}

// The fragment-order tiles' A rings with fewer than 8 warps per row block (decode_host.cu ring_a): 2
// (K = 1056, 17 chunks: the 32-row tiles) and 4 (K = 2080, 33 chunks: both tiles), whose warps that
// share a K slice each fill a ring of their own. The all-tactics tests cover the same paths; this one
// is small enough for compute-sanitizer racecheck (--gtest_filter=GemmGpu.RingWithFewWarpsPerRowBlock).
TEST(GemmGpu, RingWithFewWarpsPerRowBlock) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = std::random_device{}();
  int total = 0;
  for (int64_t m : {7, 13})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{520, 1056}, {264, 2080}}) {
      total += run_case({m, n, k, DType::kBF16, DType::kBF16, true}, seed++, "decode_dpf");
      if (HasFailure()) return;
    }
  EXPECT_GT(total, 0);
}

// Large M (the wgmma family): M, N and K that are not multiples of any tile (128/256 x 64/128/256,
// K chunks of 64), several waves of persistent tiles, both activation dtypes.
TEST(GemmGpu, W4A16LargeMRaggedAllTactics) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = std::random_device{}();
  int total = 0;
  total += run_case({1000, 1000, 2064, DType::kBF16, DType::kBF16, true}, seed++);
  if (HasFailure()) return;
  total += run_case({4097, 300, 1040, DType::kBF16, DType::kBF16, false}, seed++);
  if (HasFailure()) return;
  total += run_case({257, 4100, 80, DType::kBF16, DType::kBF16, true}, seed++);
  if (HasFailure()) return;
  total += run_case({777, 1000, 1040, DType::kFP16, DType::kFP16, true}, seed++);
  if (HasFailure()) return;
  total += run_case({300, 1, 4112, DType::kBF16, DType::kBF16, true}, seed++);   // N = 1, long K
  if (HasFailure()) return;
  total += run_case({65, 300, 48, DType::kFP16, DType::kFP16, false}, seed++);  // K < one chunk
  EXPECT_GT(total, 0);
}

// Two-way split-K inside a cluster (wgmma_kernel.cuh), every wgmma tactic. N = 6344 gives 50 tiles
// of 128 weight rows and 25 of 256, K = 1040 / 1056 17 chunks, so a tactic with 45..66 tiles splits K
// in two: the 128-row tiles that hold M in one token tile, the 256-row ones that take two. Tiles of 96
// tokens or more: each split reduces and writes half of the tile's 8-token groups, split 1's half
// partly past M (e.g. M = 90 on 96..160 tokens, M = 100 on 112..192, M = 200 on 224 / 256) or wholly
// past it (M = 20 / 40 on all of them, M = 90 on 192..256). Tiles under 96 tokens (M = 20 / 40): split
// 0 reduces and writes all.
TEST(GemmGpu, TwoWayClusterSplitRagged) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = std::random_device{}();
  int total = 0;
  for (int64_t m : {20, 40, 90, 100, 200}) {
    total += run_case({m, 6344, 1040, DType::kBF16, DType::kBF16, m % 20 == 0}, seed++, "wgmma");
    if (HasFailure()) return;
  }
  total += run_case({100, 6344, 1040, DType::kFP16, DType::kFP16, true}, seed++, "wgmma");
  if (HasFailure()) return;
  total += run_case({100, 6344, 1056, DType::kE2M1x2, DType::kBF16, false}, seed++, "wgmma");
  EXPECT_GT(total, 0);
}

// One tactic of the above (128x128, 100 tokens: split 1 writes tokens 64..99), small enough for
// compute-sanitizer racecheck (--gtest_filter=GemmGpu.TwoWayClusterSplitOneTactic).
TEST(GemmGpu, TwoWayClusterSplitOneTactic) {
  FP4KIT_REQUIRE_SM90A();
  EXPECT_EQ(run_case({100, 6344, 1040, DType::kBF16, DType::kBF16, true}, std::random_device{}(),
                     "wgmma_w4a16_128x128_s6"),
            1);
}

// Two stages per consumer step (Tactic::step_chunks = 2) with a split-K of 2 (a 2-CTA cluster where
// they fit): K = 4160 is 65 chunks, so the last pair reaches one chunk past K (zero-filled by TMA);
// SMs / 2 row tiles of 128, the last one ragged. For compute-sanitizer racecheck
// (--gtest_filter=GemmGpu.TwoStageStepClusterSplit); the ragged all-tactics tests run every _k128 tactic too.
TEST(GemmGpu, TwoStageStepClusterSplit) {
  FP4KIT_REQUIRE_SM90A();
  int dev = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int64_t tiles = sms / 2, n = tiles * 128 - 48;
  ASSERT_EQ(gemm_impl::wgmma_k_splits(tiles, 65, sms), 2);
  EXPECT_EQ(run_case({20, n, 4160, DType::kBF16, DType::kBF16, true}, std::random_device{}(),
                     "wgmma_w4a16_128x24_s12_k128"),
            1);
}

// Short K (K = 1040, 17 chunks): SMs / 4 row tiles of 128 (the last ragged) at 20 tokens, so the
// 128x24 tile splits K four ways (at most chunks / 4). Where those 4-CTA clusters do not all fit (H100:
// 30 resident clusters of 4 for 33 tiles), wgmma_split_shrink_rule halves the split into 2-CTA clusters (no
// workspace partials) instead of reducing through the workspace. Both ways against the reference.
TEST(GemmGpu, ShortKSplitShrink) {
  FP4KIT_REQUIRE_SM90A();
  int dev = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int64_t tiles = sms / 4, n = tiles * 128 - 40, k = 1040;
  ASSERT_EQ(gemm_impl::wgmma_k_splits(tiles, 17, sms), 4);
  GemmParams gp;
  gp.m = 20, gp.n = n, gp.k = k;
  gp.a_dtype = DType::kBF16;
  gp.d_dtype = DType::kBF16;
  gp.tactic = -1;
  for (const GemmTacticInfo& t : gemm_tactics())
    if (t.name == "wgmma_w4a16_128x24_s8") gp.tactic = t.id;
  ASSERT_GE(gp.tactic, 0);
  auto& rule = gemm_impl::wgmma_split_shrink_rule();
  const int saved = rule.set(0);
  const size_t ws_off = gemm_workspace_bytes(gp);
  rule.set(1);
  const size_t ws_on = gemm_workspace_bytes(gp);
  std::printf("[ShortKSplitShrink] %d SMs, N = %lld: workspace %zu bytes without the rule, %zu with it%s\n", sms,
              (long long)n, ws_off, ws_on, ws_on < ws_off ? " (halved into 2-CTA clusters)" : " (4-CTA clusters fit)");
  EXPECT_LE(ws_on, ws_off);
  uint32_t seed = std::random_device{}();
  for (int on : {1, 0}) {
    rule.set(on);
    SCOPED_TRACE(on ? "shrink on" : "shrink off");
    EXPECT_EQ(run_case({20, n, k, DType::kBF16, DType::kBF16, true}, seed++, "wgmma_w4a16_128x24_s8"), 2);
    EXPECT_EQ(run_case({20, n, k + 16, DType::kE2M1x2, DType::kBF16, false}, seed++, "wgmma_w4a16_128x24_s8"), 2);
  }
  rule.set(saved);
}

// Split tail (wgmma_kernel.cuh, Tactic::split_tail): every `_st` tactic at an M whose tiles make one full
// wave of the grid and a tail of at most half a wave (N = 6344: 50 tiles of 128 rows, 25 of 256), M
// ragged inside its last token tile, K = 1040 (17 chunks: halves of 8 and 9). The tail's tiles split K
// in two inside 2-CTA clusters; tiles of 96 tokens or more reduce half each. BF16; on 128x128 s6 also
// FP16, W4A4 and N = 6343 (the scalar epilogue).
TEST(GemmGpu, SplitTailRagged) {
  FP4KIT_REQUIRE_SM90A();
  int dev = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int64_t grid = sms - sms % 2, n = 6344;
  uint32_t seed = std::random_device{}();
  int total = 0;
  for (const GemmTacticInfo& t : gemm_tactics()) {
    int bn = 0, bm = 0, st = 0;
    const bool is_st = t.name.size() > 3 && t.name.compare(t.name.size() - 3, 3, "_st") == 0;
    if (!is_st || std::sscanf(t.name.c_str(), "wgmma_w4a16_%dx%d_s%d_st", &bn, &bm, &st) != 3) continue;
    const int64_t n_tiles = (n + bn - 1) / bn, m_tiles = grid / n_tiles + 1;
    if (n_tiles * m_tiles <= grid || 2 * (n_tiles * m_tiles - grid) > grid) continue;  // no one-wave tail here
    const int64_t m = (m_tiles - 1) * bm + bm / 2 + 3;
    SCOPED_TRACE(t.name + " m=" + std::to_string(m));
    total += run_case({m, n, 1040, DType::kBF16, DType::kBF16, m % 2 == 1}, seed++, t.name.c_str());
    if (HasFailure()) return;
    if (bm == 128 && st == 6 && bn == 128) {
      total += run_case({m, n, 1040, DType::kFP16, DType::kFP16, true}, seed++, t.name.c_str());
      total += run_case({m, n, 1056, DType::kE2M1x2, DType::kBF16, false}, seed++, t.name.c_str());
      // N % 8 != 0: the scalar epilogue, each split of a tail tile writing its half (same tile count).
      total += run_case({m, n - 1, 1040, DType::kBF16, DType::kBF16, true}, seed++, t.name.c_str());
    }
    if (HasFailure()) return;
  }
  EXPECT_GE(total, 12);
}

TEST(GemmGpu, W4A4RaggedAllTactics) {
  FP4KIT_REQUIRE_SM90A();
  uint32_t seed = std::random_device{}();
  // W4A4 rows of packed A stay 16-byte aligned (lda % 32 == 0); N and M stay ragged.
  for (int64_t m : {1, 17, 100, 777})
    // (K = 960: 15 chunks, one warp per row block, so the rolling loops run twice plus a remainder.)
    for (auto [n, k] : {std::pair<int64_t, int64_t>{100, 1056}, {1000, 2080}, {260, 960}}) {
      EXPECT_GT(run_case({m, n, k, DType::kE2M1x2, m == 17 ? DType::kFP16 : DType::kBF16, true}, seed++), 0);
      if (HasFailure()) return;
    }
  // Strided A (lda = k + 64): staging, the fragment-order decode and every tactic read rows at lda.
  EXPECT_GT(run_case({13, 300, 1056, DType::kE2M1x2, DType::kBF16, true, 64}, seed++), 0);
  // K % 32 == 16 (legal: only lda must be a multiple of 32): the last chunk's second half is
  // partly past K (the arrangement reads it whole from the row's padding and zeroes the dead step).
  EXPECT_GT(run_case({6, 200, 1040, DType::kE2M1x2, DType::kBF16, true, 16}, seed++), 0);
  EXPECT_GT(run_case({2, 130, 80, DType::kE2M1x2, DType::kFP16, false, 16}, seed++), 0);
  EXPECT_GT(run_case({9, 200, 544, DType::kE2M1x2, DType::kFP16, false, 32}, seed++), 0);
  // K >= 64 chunks and few row blocks (8 warps per row block): the rolling 8-token 32-row tile reads
  // the NVFP4 codes and scales through the warps' rings (decode_kernel.cuh RingA4) with BF16 output on
  // devices that are not HBM-rich — a partial token tile (rows past M zero-filled), K % 64 == 32 and
  // K % 32 == 16 (pieces and scales past K zero-filled), strided A — and arranges A with FP16 output.
  EXPECT_GT(run_case({13, 1040, 4128, DType::kE2M1x2, DType::kBF16, true, 32}, seed++), 0);
  EXPECT_GT(run_case({6, 260, 4144, DType::kE2M1x2, DType::kBF16, false, 16}, seed++), 0);
  EXPECT_GT(run_case({16, 520, 4160, DType::kE2M1x2, DType::kBF16, true}, seed++), 0);
  EXPECT_GT(run_case({5, 260, 4160, DType::kE2M1x2, DType::kFP16, false}, seed++), 0);
  EXPECT_GT(run_case({7, 8208, 4160, DType::kE2M1x2, DType::kBF16, true}, seed++), 0);
}

// W4A4 on the dense dp tiles at 1..2 tokens (K <= 4096) decodes NVFP4 A inside the GEMM (each CTA
// into shared memory) instead of staging it with a kernel of its own; at more tokens, or longer K, a
// staging kernel does. The decoded values are exact either way, so every dp tactic must give the same
// bits as W4A16 on A dequantized on the host (E2M1 x E4M3, no global scale) — ragged K (a partial last
// chunk), strided A, both output types, both ways of staging at 1..2 tokens.
TEST(GemmGpu, W4A4MatchesW4A16OnDecodedActivationsBitForBit) {
  FP4KIT_REQUIRE_SM90A();
  std::mt19937 rng(std::random_device{}());
  int compared = 0;
  // The last case's grid (256 CTAs) is large enough for programmatic dependent launch, and its A is
  // quantized on the GPU by the kernel right before the GEMM: A read before the PDL wait shows.
  for (const Case& c : {Case{1, 300, 1056, DType::kE2M1x2, DType::kBF16, true},
                        Case{2, 300, 1056, DType::kE2M1x2, DType::kFP16, false},
                        Case{2, 260, 2080, DType::kE2M1x2, DType::kBF16, true, 64},
                        Case{1, 260, 960, DType::kE2M1x2, DType::kBF16, false},
                        Case{2, 200, 32, DType::kE2M1x2, DType::kFP16, true},
                        Case{5, 260, 2080, DType::kE2M1x2, DType::kBF16, false, 64},  // (staged)
                        Case{2, 520, 8256, DType::kE2M1x2, DType::kBF16, true},        // (staged)
                        Case{1, 300, 14400, DType::kE2M1x2, DType::kFP16, false, 32},  // (staged)
                        Case{2, 4096, 4096, DType::kE2M1x2, DType::kBF16, true}}) {
    const bool gpu_quant = c.n == 4096;
    const int64_t lda = c.k + c.lda_pad;
    auto w = random_16bit(c.n * c.k, DType::kBF16, rng, 0.05f);
    auto a16 = random_16bit(c.m * c.k, DType::kBF16, rng, 1.0f);
    Quantized qb = quantize_cpu(w, DType::kBF16, c.n, c.k, ScaleLayout::kLinear);
    Quantized qa = quantize_cpu(a16, DType::kBF16, c.m, c.k, ScaleLayout::kSwizzled128x4);
    std::vector<uint16_t> bias(c.n);
    for (auto& b : bias) b = c.d_dtype == DType::kBF16 ? format::float_to_bf16(float(rng() % 200) / 100 - 1)
                                                          : format::float_to_fp16(float(rng() % 200) / 100 - 1);
    DeviceBuffer<uint8_t> a_codes(size_t(c.m * lda / 2)), a_scales(qa.scales.size());
    DeviceBuffer<uint16_t> a_in(a16.size()), bias_dev(c.n);
    DeviceBuffer<float> a_gs(1);
    bias_dev.upload(bias);
    a_in.upload(a16);
    a_gs.upload({qa.gs});
    Nvfp4QuantizeParams q;  // the GPU quantizer (gpu_quant), writing A at row stride lda
    q.input = a_in.ptr;
    q.rows = c.m, q.cols = c.k;
    q.global_scale = a_gs.ptr;
    q.out_codes = a_codes.ptr;
    q.out_codes_bytes = int64_t(a_codes.count);
    q.out_scales = a_scales.ptr;
    q.out_scales_bytes = int64_t(a_scales.count);
    q.scale_layout = ScaleLayout::kSwizzled128x4;
    q.enable_pdl = true;
    if (gpu_quant) {
      ASSERT_EQ(lda, c.k);
      FP4_OK(quantize_nvfp4(q, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      qa.codes = a_codes.download();
      qa.scales = a_scales.download();
    } else {
      std::vector<uint8_t> codes(size_t(c.m * lda / 2), uint8_t(0xff));
      for (int64_t r = 0; r < c.m; ++r) std::copy_n(qa.codes.begin() + r * c.k / 2, c.k / 2, codes.begin() + r * lda / 2);
      a_codes.upload(codes);
      a_scales.upload(qa.scales);
    }
    // A decoded on the host into the output's 16-bit type.
    std::vector<uint16_t> a_dec(size_t(c.m * c.k));
    const int64_t sf_cols = format::round_up(c.k / 16, 4);
    for (int64_t r = 0; r < c.m; ++r)
      for (int64_t k = 0; k < c.k; ++k) {
        const uint8_t byte = qa.codes[size_t((r * c.k + k) / 2)];
        const float sf = format::e4m3_to_float(qa.scales[size_t(format::sf_offset_128x4(r, k / 16, sf_cols))]);
        const float v = format::e2m1_to_float(k % 2 ? format::e2m1_high(byte) : format::e2m1_low(byte)) * sf;
        a_dec[size_t(r * c.k + k)] = c.d_dtype == DType::kBF16 ? format::float_to_bf16(v) : format::float_to_fp16(v);
      }
    DeviceBuffer<uint16_t> a_dev(a_dec.size()), d4(c.m * c.n), d16(c.m * c.n);
    a_dev.upload(a_dec);
    const int64_t packed_bytes = prepacked_weight_bytes(c.n, c.k);
    DeviceBuffer<uint8_t> packed(packed_bytes);
    FP4_OK(prepack_quantized(qb, c.n, c.k, packed));
    DeviceBuffer<float> alpha(1);
    alpha.upload({1.0f / (qa.gs * qb.gs)});
    GemmParams g4;
    g4.m = c.m, g4.n = c.n, g4.k = c.k;
    g4.a_dtype = DType::kE2M1x2;
    g4.a = a_codes.ptr;
    g4.lda = lda;
    g4.a_scales = a_scales.ptr;
    g4.b_prepacked = packed.ptr;
    g4.b_prepacked_bytes = packed_bytes;
    g4.alpha = alpha.ptr;
    g4.bias = c.bias ? bias_dev.ptr : nullptr;
    g4.d = d4.ptr;
    g4.d_dtype = c.d_dtype;
    GemmParams g16 = g4;
    g16.a_dtype = c.d_dtype;
    g16.a = a_dev.ptr;
    g16.lda = c.k;
    g16.a_scales = nullptr;
    g16.d = d16.ptr;
    for (const GemmTacticInfo& t : gemm_tactics()) {
      const std::string name = t.name;
      if (name.rfind("decode_dp_m", 0) != 0 && name.rfind("decode_dpr_m", 0) != 0) continue;
      g4.tactic = g16.tactic = t.id;
      if (!gemm_tactic_can_implement(t.id, g4).is_ok()) continue;
      for (bool pdl : {false, true}) {
        g4.enable_pdl = g16.enable_pdl = pdl;
        DeviceBuffer<uint8_t> ws(std::max(gemm_workspace_bytes(g4), gemm_workspace_bytes(g16)));
        CUDA_OK(cudaMemset(d4.ptr, 0xff, c.m * c.n * 2));
        CUDA_OK(cudaMemset(d16.ptr, 0xff, c.m * c.n * 2));
        if (gpu_quant) {  // poison A, then let the quantizer rewrite it just before the GEMM
          CUDA_OK(cudaMemset(a_codes.ptr, 0x77, a_codes.count));
          FP4_OK(quantize_nvfp4(q, nullptr));
        }
        FP4_OK(gemm(g4, ws.ptr, ws.count, nullptr));
        FP4_OK(gemm(g16, ws.ptr, ws.count, nullptr));
        CUDA_OK(cudaDeviceSynchronize());
        const std::vector<uint16_t> x = d4.download(), y = d16.download();
        EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * 2), 0)
            << name << " m=" << c.m << " n=" << c.n << " k=" << c.k << " lda=" << lda << " pdl=" << pdl;
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 9 * 2 * 4);
}

// GemmParams::enable_pdl on the wgmma family: the kernel requests its first stages' weights before
// its PDL wait, and everything the previous kernel may write after it. A chain of two GEMMs, the
// second reading the first's output as its activations (and both writing a D that the other call
// of the pair also writes), launched back to back with enable_pdl, must give the bits of the same
// chain with a device synchronization between the calls — for every wgmma tactic of the second
// GEMM, W4A16 and W4A4 (whose activation staging kernel then runs between the two).
TEST(GemmGpu, WgmmaChainWithPdlMatchesSerialized) {
  FP4KIT_REQUIRE_SM90A();
  std::mt19937 rng(std::random_device{}());
  const int64_t m = 136, n1 = 1024, k1 = 2080, n2 = 520;
  auto w1 = random_16bit(n1 * k1, DType::kBF16, rng, 0.05f);
  auto w2 = random_16bit(n2 * n1, DType::kBF16, rng, 0.05f);
  auto x = random_16bit(m * k1, DType::kBF16, rng, 1.0f);
  Quantized q1 = quantize_cpu(w1, DType::kBF16, n1, k1, ScaleLayout::kLinear);
  Quantized q2 = quantize_cpu(w2, DType::kBF16, n2, n1, ScaleLayout::kLinear);
  DeviceBuffer<uint8_t> p1(prepacked_weight_bytes(n1, k1)), p2(prepacked_weight_bytes(n2, n1));
  FP4_OK(prepack_quantized(q1, n1, k1, p1));
  FP4_OK(prepack_quantized(q2, n2, n1, p2));
  DeviceBuffer<uint16_t> x_dev(x.size()), h(m * n1), d2(m * n2);
  DeviceBuffer<float> alpha1(1), alpha2(1), h_gs(1);
  x_dev.upload(x);
  alpha1.upload({1.0f / q1.gs});
  alpha2.upload({1.0f / q2.gs});
  // W4A4: the second GEMM's NVFP4 activations are h quantized on the GPU, right after the first GEMM.
  h_gs.upload({1.0f});
  DeviceBuffer<uint8_t> h_codes(m * n1 / 2), h_scales(scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, m, n1));

  GemmParams g1;
  g1.m = m, g1.n = n1, g1.k = k1;
  g1.a_dtype = DType::kBF16;
  g1.a = x_dev.ptr;
  g1.b_prepacked = p1.ptr;
  g1.b_prepacked_bytes = int64_t(p1.count);
  g1.alpha = alpha1.ptr;
  g1.d = h.ptr;
  g1.d_dtype = DType::kBF16;
  Nvfp4QuantizeParams q;
  q.input = h.ptr;
  q.rows = m, q.cols = n1;
  q.global_scale = h_gs.ptr;
  q.out_codes = h_codes.ptr;
  q.out_codes_bytes = int64_t(h_codes.count);
  q.out_scales = h_scales.ptr;
  q.out_scales_bytes = int64_t(h_scales.count);
  q.scale_layout = ScaleLayout::kSwizzled128x4;
  int compared = 0;
  for (const bool w4a4 : {false, true}) {
    GemmParams g2;
    g2.m = m, g2.n = n2, g2.k = n1;
    g2.a_dtype = w4a4 ? DType::kE2M1x2 : DType::kBF16;
    g2.a = w4a4 ? static_cast<const void*>(h_codes.ptr) : static_cast<const void*>(h.ptr);
    g2.a_scales = w4a4 ? h_scales.ptr : nullptr;
    g2.b_prepacked = p2.ptr;
    g2.b_prepacked_bytes = int64_t(p2.count);
    g2.alpha = alpha2.ptr;
    g2.d = d2.ptr;
    g2.d_dtype = DType::kBF16;
    for (const GemmTacticInfo& t : gemm_tactics()) {
      if (std::string(t.name).rfind("wgmma_", 0) != 0) continue;
      g2.tactic = t.id;
      if (!gemm_tactic_can_implement(t.id, g2).is_ok()) continue;
      DeviceBuffer<uint8_t> ws(std::max(gemm_workspace_bytes(g1), gemm_workspace_bytes(g2)));
      std::vector<uint16_t> ref;
      for (const bool pdl : {false, true}) {
        g1.enable_pdl = g2.enable_pdl = q.enable_pdl = pdl;
        CUDA_OK(cudaMemset(h.ptr, 0xff, h.count * 2));  // NaN poison
        CUDA_OK(cudaMemset(d2.ptr, 0xff, d2.count * 2));
        CUDA_OK(cudaMemset(h_codes.ptr, 0x77, h_codes.count));
        CUDA_OK(cudaDeviceSynchronize());
        FP4_OK(gemm(g1, ws.ptr, ws.count, nullptr));
        if (!pdl) CUDA_OK(cudaDeviceSynchronize());
        if (w4a4) FP4_OK(quantize_nvfp4(q, nullptr));
        if (!pdl) CUDA_OK(cudaDeviceSynchronize());
        FP4_OK(gemm(g2, ws.ptr, ws.count, nullptr));
        // A second pair right behind: its first GEMM rewrites h while the second may still read it.
        if (pdl) {
          FP4_OK(gemm(g1, ws.ptr, ws.count, nullptr));
          if (w4a4) FP4_OK(quantize_nvfp4(q, nullptr));
          FP4_OK(gemm(g2, ws.ptr, ws.count, nullptr));
        }
        CUDA_OK(cudaDeviceSynchronize());
        const std::vector<uint16_t> d = d2.download();
        if (!pdl) {
          ref = d;
          int64_t nonfinite = 0;
          for (uint16_t v : d) nonfinite += !std::isfinite(format::bf16_to_float(v));
          EXPECT_EQ(nonfinite, 0) << t.name << (w4a4 ? " w4a4" : " w4a16");
        } else {
          EXPECT_EQ(std::memcmp(ref.data(), d.data(), d.size() * 2), 0)
              << t.name << (w4a4 ? " w4a4" : " w4a16") << ": differs with enable_pdl";
          ++compared;
        }
      }
    }
  }
  EXPECT_GE(compared, 20);
}

TEST(GemmApi, RejectsBadArguments) {
  GemmParams p;
  p.m = 4, p.n = 64, p.k = 40;  // K not a multiple of 16
  p.a = reinterpret_cast<void*>(0x1000);
  p.b_prepacked = reinterpret_cast<void*>(0x2000);
  p.b_prepacked_bytes = 1 << 20;
  p.alpha = reinterpret_cast<const float*>(0x3000);
  p.d = reinterpret_cast<void*>(0x4000);
  Status s = gemm(p, nullptr, 0, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("k (=40)"), std::string::npos) << s.message();
  p.k = 64;
  p.b_prepacked_bytes = 10;
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kBufferTooSmall);
  p.b_prepacked_bytes = 1 << 20;
  p.a = reinterpret_cast<void*>(0x1002);
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kMisaligned);
  p.a = reinterpret_cast<void*>(0x1000);
  p.alpha = nullptr;
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kInvalidArgument);
  p.alpha = reinterpret_cast<const float*>(0x3000);
  p.m = 0;
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kInvalidArgument);
  p.m = 4;
  p.d_dtype = DType::kFP16;  // W4A16 with bf16 A must write bf16
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kNotSupported);
  p.d_dtype = DType::kBF16;
  p.a_dtype = DType::kE2M1x2;  // W4A4 needs a_scales
  p.lda = 64;
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kInvalidArgument);
  p.a_scales = reinterpret_cast<const uint8_t*>(0x5002);  // (read as 32-bit words)
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kMisaligned);
  p.a_scales = reinterpret_cast<const uint8_t*>(0x5000);
  p.k = 48, p.lda = 48;  // W4A4 rows must be 16-byte aligned: k % 32
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kInvalidArgument);
  p.k = 64, p.lda = 0;
  p.a_dtype = DType::kBF16;
  p.tactic = 100000;
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kInvalidArgument);
  p.tactic = -7;  // only -1 means automatic
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gemm_default_tactic(p), -1);
  p.tactic = -1;
  p.d = reinterpret_cast<void*>(0x4001);  // 16-bit stores
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kMisaligned);
  p.d = reinterpret_cast<void*>(0x4000);
  p.bias = reinterpret_cast<const void*>(0x6001);
  EXPECT_EQ(gemm(p, nullptr, 0, nullptr).code(), StatusCode::kMisaligned);
  p.bias = nullptr;
  // The size queries run before the pointers are set; outside the GEMMs' shapes they answer 0 / -1
  // (m = 2^62 once made the tuner's M bucket loop forever).
  GemmParams q;
  q.m = int64_t(1) << 62, q.n = 64, q.k = 64;
  EXPECT_EQ(gemm_workspace_bytes(q), 0u);
  EXPECT_EQ(gemm_default_tactic(q), -1);
  EXPECT_EQ(tune_m_bucket((int64_t(1) << 62) + 1), int64_t(1) << 62);

  WeightPrepackParams w;
  w.n = 16, w.k = 24;
  EXPECT_EQ(prepack_weights(w, nullptr).code(), StatusCode::kInvalidArgument);
  w.k = 32;
  w.codes = reinterpret_cast<const uint8_t*>(0x1000);
  w.scales = reinterpret_cast<const uint8_t*>(0x2000);
  w.out = reinterpret_cast<void*>(0x3000);
  w.out_bytes = 0;
  for (int64_t n : {int64_t(1) << 57, int64_t(1) << 58}) {  // padded sizes that overflowed to <= 0
    w.n = n;
    const Status s = prepack_weights(w, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_EQ(prepacked_weight_bytes(n, 32), 0);
  }
  w.n = 16;
  w.out_bytes = prepacked_weight_bytes(16, 32);
  w.scale_layout = static_cast<ScaleLayout>(99);
  const Status s99 = prepack_weights(w, nullptr);
  EXPECT_EQ(s99.code(), StatusCode::kInvalidArgument) << s99.to_string();
  EXPECT_NE(s99.message().find("scale_layout"), std::string::npos) << s99.message();
}
