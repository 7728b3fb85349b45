// Grouped GEMM (gemm/grouped.h, the MoE building block) on the GPU against the CPU reference GEMM
// run group by group: every grouped tactic, ragged groups (empty ones included), rows outside every
// group left untouched, bit-identical reruns. Skips without an sm_90a GPU. The validation tests at
// the end run everywhere.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/device_buffer.h"
#include "common/gpu_test.h"
#include "format/e4m3.h"
#include "format/float16.h"
#include "fp4kit/gemm.h"
#include "fp4kit/reference.h"
#include "gemm/grouped.h"

using namespace fp4kit;
using gemm_impl::GroupedGemmParams;

namespace {

struct Case {
  int64_t groups, n, k;
  std::vector<int> rows;  // per group (size groups)
  DType dtype;
};

float to_float(uint16_t v, DType t) { return t == DType::kBF16 ? format::bf16_to_float(v) : format::fp16_to_float(v); }

void run_case(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t G = c.groups, n = c.n, k = c.k;
  std::vector<int32_t> offsets(G + 1, 0), active;
  for (int64_t g = 0; g < G; ++g) {
    offsets[g + 1] = offsets[g] + c.rows[g];
    if (c.rows[g] > 0) active.push_back(int32_t(g));
  }
  const int32_t num_active = int32_t(active.size());
  active.resize(G, -1);  // the tail is never read
  const int64_t used_rows = offsets[G];
  const int64_t max_rows = used_rows + 5;  // rows past the last group must stay untouched
  int max_group_rows = 0;
  for (int r : c.rows) max_group_rows = std::max(max_group_rows, r);

  // Weights: random codes, scales in [2^-3, 2^1] with random signs (and some zero blocks).
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> mag(0.125f, 2.0f);
  std::vector<uint8_t> codes(G * n * k / 2), scales(G * n * (k / 16));
  for (auto& b : codes) b = uint8_t(byte(rng));
  for (auto& s : scales) {
    const int r = byte(rng);
    s = r < 8 ? 0 : uint8_t(format::float_to_e4m3(mag(rng)) | (r & 1 ? 0x80 : 0));
  }
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // A is a gathered copy of `src` (row r = src row row_token[r], repeats included): the 256-row wgmma
  // tiles also run on src through row_token (GroupedGemmParams::row_token) and must match bitwise.
  const int64_t src_rows = used_rows / 2 + 3;
  std::vector<uint16_t> src(src_rows * k);
  for (auto& x : src) x = c.dtype == DType::kBF16 ? format::float_to_bf16(nd(rng)) : format::float_to_fp16(nd(rng));
  std::vector<int32_t> row_token(max_rows);
  std::vector<uint16_t> a(max_rows * k);
  for (int64_t r = 0; r < max_rows; ++r) {
    row_token[r] = int32_t(rng() % uint32_t(src_rows));
    std::memcpy(a.data() + r * k, src.data() + int64_t(row_token[r]) * k, size_t(k) * 2);
  }
  std::vector<float> alpha(G);
  for (auto& x : alpha) x = std::ldexp(mag(rng), -3);

  const int64_t per_group = prepacked_weight_bytes(n, k);
  DeviceBuffer<uint8_t> d_codes(codes.size()), d_scales(scales.size()), d_packed(G * per_group);
  d_codes.upload(codes);
  d_scales.upload(scales);
  for (int64_t g = 0; g < G; ++g) {
    WeightPrepackParams pp;
    pp.n = n;
    pp.k = k;
    pp.codes = d_codes.ptr + g * n * k / 2;
    pp.scales = d_scales.ptr + g * n * (k / 16);
    pp.scale_layout = ScaleLayout::kLinear;
    pp.out = d_packed.ptr + g * per_group;
    pp.out_bytes = per_group;
    Status s = prepack_weights(pp, nullptr);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }
  DeviceBuffer<uint16_t> d_a(a.size()), d_src(src.size()), d_d(max_rows * n);
  DeviceBuffer<int32_t> d_off(offsets.size()), d_act(active.size()), d_num(1), d_row_token(row_token.size());
  DeviceBuffer<float> d_alpha(G);
  d_a.upload(a);
  d_src.upload(src);
  d_row_token.upload(row_token);
  d_off.upload(offsets);
  d_act.upload(active);
  d_num.upload({num_active});
  d_alpha.upload(alpha);

  // Reference, group by group.
  std::vector<uint16_t> ref(max_rows * n, 0xFFFF);
  for (int64_t g = 0; g < G; ++g) {
    if (c.rows[g] == 0) continue;
    reference::GemmRefParams rp;
    rp.m = c.rows[g];
    rp.n = n;
    rp.k = k;
    rp.a_dtype = c.dtype;
    rp.a = a.data() + int64_t(offsets[g]) * k;
    rp.b = codes.data() + g * n * k / 2;
    rp.b_scales = scales.data() + g * n * (k / 16);
    rp.b_scale_layout = ScaleLayout::kLinear;
    rp.alpha = alpha[g];
    rp.out_dtype = c.dtype;
    rp.d = ref.data() + int64_t(offsets[g]) * n;
    Status s = reference::gemm(rp);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }

  for (int tactic = -1; tactic < gemm_impl::grouped_gemm_tactic_count(); ++tactic) {
    GroupedGemmParams p;
    p.groups = G;
    p.max_rows = max_rows;
    p.max_group_rows = max_group_rows;
    p.n = n;
    p.k = k;
    p.a_dtype = c.dtype;
    p.a = d_a.ptr;
    p.offsets = d_off.ptr;
    p.active = d_act.ptr;
    p.num_active = d_num.ptr;
    p.b_prepacked = d_packed.ptr;
    p.alpha = d_alpha.ptr;
    p.d = d_d.ptr;
    p.tactic = tactic;
    const std::string what = "tactic " + std::to_string(tactic) + " G=" + std::to_string(G) + " n=" +
                             std::to_string(n) + " k=" + std::to_string(k) + " rows=" + std::to_string(used_rows);
    const Status ci = gemm_impl::grouped_gemm_can_implement(p);
    if (!ci.is_ok()) {
      ADD_FAILURE() << what << ": " << ci.to_string();
      continue;
    }
    const size_t ws_bytes = gemm_impl::grouped_gemm_workspace_bytes(p);
    DeviceBuffer<uint8_t> ws(ws_bytes);
    std::vector<uint16_t> first;
    for (int rep = 0; rep < 2; ++rep) {
      cudaMemset(d_d.ptr, 0xFF, max_rows * n * 2);
      Status s = gemm_impl::grouped_gemm(p, ws.ptr, ws_bytes, nullptr);
      ASSERT_TRUE(s.is_ok()) << what << ": " << s.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
      std::vector<uint16_t> out = d_d.download();
      if (rep == 1) {
        EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * 2)) << what << ": rerun not bit-identical";
        break;
      }
      const int id = tactic >= 0 ? tactic : gemm_impl::grouped_gemm_default_tactic(p);
      const gemm_impl::GroupedTactic& gt = *gemm_impl::grouped_gemm_tactic(id);
      GroupedGemmParams q = p;  // the same rows read in place through row_token
      q.a = d_src.ptr;
      q.a_rows = src_rows;
      q.row_token = d_row_token.ptr;
      if (gt.family == gemm_impl::GroupedFamily::kWgmma && gt.block_n == 256) {
        cudaMemset(d_d.ptr, 0xFF, max_rows * n * 2);
        Status sg = gemm_impl::grouped_gemm(q, nullptr, 0, nullptr);
        ASSERT_TRUE(sg.is_ok()) << what << " gathered: " << sg.to_string();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what << " gathered";
        EXPECT_EQ(0, std::memcmp(out.data(), d_d.download().data(), out.size() * 2))
            << what << ": gathered rows differ from the permuted copy";
      } else {
        EXPECT_EQ(gemm_impl::grouped_gemm_can_implement(q).code(), StatusCode::kNotSupported)
            << what << ": only the 256-row wgmma tiles gather rows";
      }
      first = out;
      double num = 0, den = 0;
      int64_t bad = 0;
      for (int64_t r = 0; r < max_rows; ++r)
        for (int64_t j = 0; j < n; ++j) {
          const uint16_t o = out[r * n + j];
          if (r >= used_rows) {
            bad += o != 0xFFFF;  // outside every group: untouched
            continue;
          }
          const double x = to_float(o, c.dtype), y = to_float(ref[r * n + j], c.dtype);
          if (!std::isfinite(x)) ++bad;
          num += (x - y) * (x - y);
          den += y * y;
        }
      EXPECT_EQ(bad, 0) << what << ": non-finite or stray outputs";
      if (den > 0) EXPECT_LE(std::sqrt(num / den), 2e-3) << what;
    }
  }
}

TEST(GroupedGemmGpu, RaggedGroupsEveryTactic) {
  FP4KIT_REQUIRE_SM90A();
  // Few rows per group (decode regime), empty groups in between, ragged n and k.
  run_case({5, 200, 144, {1, 0, 3, 8, 0}, DType::kBF16}, 1);
  run_case({8, 128, 256, {2, 1, 1, 0, 0, 1, 17, 1}, DType::kFP16}, 2);
  // Many rows per group (wgmma regime): tiles cut by group boundaries.
  run_case({3, 320, 528, {130, 0, 300}, DType::kBF16}, 3);
  run_case({4, 256, 1040, {64, 257, 1, 128}, DType::kFP16}, 4);
  run_case({6, 200, 960, {3, 1, 0, 2, 5, 1}, DType::kBF16}, 9);  // 15 chunks: rolling loops run twice
  // 33 K chunks: past kStoreWarpsMaxKChunks, the BN = 128 wgmma tiles' consumers copy their epilogue
  // out themselves (every other case, K <= 2048, uses the store warps on the BN = 128, BM > 64 tactics).
  run_case({3, 200, 2112, {130, 1, 144}, DType::kBF16}, 12);
  // Groups on both sides of the widths the 64-token tile narrows to (16, 32), of a 112 / 128 / 144-token
  // tile, of a second 144-token m tile, and of the 160-token tile's two widths (144 and 160) and its
  // second m tile.
  run_case({12, 256, 192, {16, 17, 32, 33, 112, 113, 128, 129, 144, 145, 160, 161}, DType::kBF16}, 10);
  run_case({12, 256, 192, {16, 17, 32, 33, 112, 113, 128, 129, 144, 145, 160, 161}, DType::kFP16}, 11);
  // Hundreds of groups (several rounds of the wgmma kernel's 32-group prefix scan).
  {
    std::vector<int> rows(256);
    std::mt19937 r(7);
    for (auto& x : rows) x = int(r() % 200);
    rows[3] = 0;
    run_case({256, 128, 128, rows, DType::kBF16}, 6);
    run_case({256, 512, 256, rows, DType::kBF16}, 7);  // several n tiles per group
  }
  // One group, all rows empty.
  run_case({3, 64, 64, {0, 0, 0}, DType::kBF16}, 5);
  // Many one-row groups with short K: enough row blocks for the dp tactics to run the balanced
  // one-warp-per-row-block kernel (grouped_dp_balanced, 3 units per resident warp on an H100).
  {
    std::vector<int> rows(256, 0);
    for (size_t g = 0; g < rows.size(); g += 2) rows[g] = 1;
    run_case({256, 4096, 64, rows, DType::kBF16}, 8);
  }
}

TEST(GroupedGemmApi, RejectsBadArguments) {
  GroupedGemmParams p;
  p.groups = 2;
  p.max_rows = 4;
  p.n = 64;
  p.k = 64;
  alignas(16) static uint8_t dummy[64];
  p.a = dummy;
  p.offsets = reinterpret_cast<const int32_t*>(dummy);
  p.active = reinterpret_cast<const int32_t*>(dummy);
  p.num_active = reinterpret_cast<const int32_t*>(dummy);
  p.b_prepacked = dummy;
  p.alpha = reinterpret_cast<const float*>(dummy);
  p.d = dummy;
  EXPECT_TRUE(gemm_impl::grouped_gemm_can_implement(p).is_ok());
  GroupedGemmParams q = p;
  q.k = 40;
  Status s = gemm_impl::grouped_gemm_can_implement(q);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("k"), std::string::npos) << s.message();
  q = p;
  q.offsets = nullptr;
  const Status s2 = gemm_impl::grouped_gemm_can_implement(q);
  EXPECT_EQ(s2.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s2.message().find("offsets"), std::string::npos) << s2.message();
  q = p;
  q.tactic = 99;
  EXPECT_EQ(gemm_impl::grouped_gemm_can_implement(q).code(), StatusCode::kInvalidArgument);
  q = p;
  q.a_dtype = DType::kE2M1x2;
  EXPECT_EQ(gemm_impl::grouped_gemm_can_implement(q).code(), StatusCode::kInvalidArgument);
  q = p;
  q.groups = 2000;
  q.tactic = 5;  // wgmma: at most 1024 groups
  EXPECT_EQ(gemm_impl::grouped_gemm_can_implement(q).code(), StatusCode::kNotSupported);
  // max_rows == 0 is an empty problem, not an error.
  q = p;
  q.max_rows = 0;
  EXPECT_TRUE(gemm_impl::grouped_gemm_can_implement(q).is_ok());
}

TEST(GroupedGemmApi, HeuristicFollowsRowsPerGroup) {
  GroupedGemmParams p;
  p.groups = 256;
  p.n = 1024;
  p.k = 2048;
  p.max_rows = 8;  // T = 1, top-8
  p.max_group_rows = 1;
  EXPECT_EQ(gemm_impl::grouped_gemm_tactic(gemm_impl::grouped_gemm_default_tactic(p))->family,
            gemm_impl::GroupedFamily::kDecode);
  // T = 4, top-8 over 256 experts: 32-row dp blocks; rolling load groups at long K (FC1 of the
  // H >= 4096 presets) unless the group list is ready before the launch.
  p.max_rows = 32;
  EXPECT_STREQ(gemm_impl::grouped_gemm_tactic(gemm_impl::grouped_gemm_default_tactic(p))->name,
               "grouped_decode_dp_m8_r32_u4");
  p.n = 512, p.k = 7168;
  EXPECT_STREQ(gemm_impl::grouped_gemm_tactic(gemm_impl::grouped_gemm_default_tactic(p))->name,
               "grouped_decode_dpr_m8_r32_u4");
  p.groups_ready = true;
  EXPECT_STREQ(gemm_impl::grouped_gemm_tactic(gemm_impl::grouped_gemm_default_tactic(p))->name,
               "grouped_decode_dp_m8_r32_u4");
  p.groups_ready = false, p.n = 1024, p.k = 2048;
  p.max_rows = 8 * 4096;  // T = 4096: 128 rows per expert
  p.max_group_rows = 4096;
  const gemm_impl::GroupedTactic* t = gemm_impl::grouped_gemm_tactic(gemm_impl::grouped_gemm_default_tactic(p));
  EXPECT_EQ(t->family, gemm_impl::GroupedFamily::kWgmma);
  EXPECT_EQ(t->block_n, 128);  // measured fastest at 128 rows per expert (grouped.cu, sessions 7, 36):
  EXPECT_EQ(t->block_m, 160);  // one 160-token tile per expert, at wgmma N = 144 where the rows fit
  p.n = 128;  // fewer weight rows than the 256-row tile
  EXPECT_EQ(gemm_impl::grouped_gemm_tactic(gemm_impl::grouped_gemm_default_tactic(p))->block_n, 128);
}

}  // namespace
