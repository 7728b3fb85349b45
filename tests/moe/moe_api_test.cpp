// fused_moe / moe_route / prepack_moe_weights argument validation (code and message), workspace
// sizing and layout, and the T = 0 contract. CPU only: every call here fails validation or has an
// empty batch, so the fake device pointers are never dereferenced or launched on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fp4kit/gemm.h"
#include "fp4kit/moe.h"
#include "gemm/grouped.h"
#include "moe/moe_kernels.h"
#include "moe/fused_decode.h"
#include "moe/moe_workspace.h"

namespace {

using namespace fp4kit;

template <typename T = void>
T* fake(uintptr_t addr) {
  return reinterpret_cast<T*>(addr);
}

// A problem that passes every check (the caller breaks one thing). Never run with T > 0 unbroken.
MoeParams valid_params() {
  MoeParams p;
  p.num_tokens = 5;
  p.max_tokens = 8;
  p.hidden = 128;
  p.inter = 192;
  p.num_experts = 8;
  p.top_k = 2;
  p.ep_size = 2;
  p.ep_rank = 1;
  p.mode = MoeMode::kW4A16;
  p.act_dtype = DType::kBF16;
  p.input_dtype = DType::kBF16;
  p.input = fake(0x10000);
  p.selected_experts = fake<const int32_t>(0x20000);
  p.final_scales = fake<const float>(0x30000);
  p.fc1_weights = fake(0x100000);
  p.fc1_weights_bytes = moe_prepacked_weight_bytes(4, 2 * 192, 128);
  p.fc2_weights = fake(0x800000);
  p.fc2_weights_bytes = moe_prepacked_weight_bytes(4, 128, 192);
  p.fc1_alpha = fake<const float>(0x40000);
  p.fc2_alpha = fake<const float>(0x50000);
  p.fc1_act_global = fake<const float>(0x60000);
  p.fc2_act_global = fake<const float>(0x70000);
  p.output = fake(0x90000);
  return p;
}

Status run(const MoeParams& p) {
  const size_t ws = moe_workspace_bytes(p);
  return fused_moe(p, fake(0x1000000), ws, nullptr);
}

void expect_error(const Status& s, StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos) << "message: " << s.message() << "\nexpected: " << needle;
  EXPECT_EQ(s.message().rfind("fused_moe: ", 0), 0u) << s.message();
}

TEST(MoeApi, FusedMoeRejectsEachBadArgument) {
  struct Case {
    const char* what;
    void (*mutate)(MoeParams&);
    StatusCode code;
    const char* needle;
  };
  const Case cases[] = {
      {"negative T", [](MoeParams& p) { p.num_tokens = -1; }, StatusCode::kInvalidArgument,
       "num_tokens (=-1) must not be negative"},
      {"negative max_tokens", [](MoeParams& p) { p.max_tokens = -2; }, StatusCode::kInvalidArgument,
       "max_tokens (=-2) must not be negative"},
      {"hidden 0", [](MoeParams& p) { p.hidden = 0; }, StatusCode::kInvalidArgument, "hidden (=0) must be positive"},
      {"hidden % 64", [](MoeParams& p) { p.hidden = 96; }, StatusCode::kInvalidArgument,
       "hidden (=96) must be a multiple of 64"},
      {"inter % 64", [](MoeParams& p) { p.inter = 80; }, StatusCode::kInvalidArgument,
       "inter (=80) must be a multiple of 64"},
      {"inter 0", [](MoeParams& p) { p.inter = 0; }, StatusCode::kInvalidArgument, "inter (=0) must be positive"},
      {"E 0", [](MoeParams& p) { p.num_experts = 0; }, StatusCode::kInvalidArgument,
       "num_experts (=0) must be positive"},
      {"k 0", [](MoeParams& p) { p.top_k = 0; }, StatusCode::kInvalidArgument, "top_k (=0) must be positive"},
      {"k > E", [](MoeParams& p) { p.top_k = 9; }, StatusCode::kInvalidArgument,
       "fused_moe: top_k (=9) must be <= num_experts (=8)"},
      {"ep_size 0", [](MoeParams& p) { p.ep_size = 0; }, StatusCode::kInvalidArgument,
       "ep_size (=0) must be positive"},
      {"E % ep_size", [](MoeParams& p) { p.ep_size = 3; p.ep_rank = 0; }, StatusCode::kInvalidArgument,
       "num_experts (=8) must be a multiple of ep_size (=3)"},
      {"ep_rank too big", [](MoeParams& p) { p.ep_rank = 2; }, StatusCode::kInvalidArgument,
       "ep_rank (=2) must be in [0, ep_size (=2))"},
      {"ep_rank negative", [](MoeParams& p) { p.ep_rank = -1; }, StatusCode::kInvalidArgument,
       "ep_rank (=-1) must be in [0, ep_size (=2))"},
      {"too many local experts", [](MoeParams& p) { p.num_experts = 40000; p.ep_size = 1; p.ep_rank = 0; },
       StatusCode::kNotSupported, "num_experts / ep_size (=40000) must be <= 16384"},
      {"bad mode", [](MoeParams& p) { p.mode = static_cast<MoeMode>(7); }, StatusCode::kInvalidArgument,
       "mode (=7) is not a MoeMode"},
      {"act fp32", [](MoeParams& p) { p.act_dtype = DType::kFP32; p.input_dtype = DType::kFP32; },
       StatusCode::kInvalidArgument, "act dtype fp32 not supported (expected bf16, fp16)"},
      {"input dtype differs (W4A16)", [](MoeParams& p) { p.input_dtype = DType::kFP16; },
       StatusCode::kInvalidArgument, "input dtype fp16 must be the act dtype (bf16) in W4A16"},
      {"fp4 input in W4A16", [](MoeParams& p) { p.input_dtype = DType::kE2M1x2; }, StatusCode::kInvalidArgument,
       "input dtype e2m1x2 must be the act dtype (bf16) in W4A16"},
      {"input dtype differs (W4A4)", [](MoeParams& p) { p.mode = MoeMode::kW4A4; p.input_dtype = DType::kFP16; },
       StatusCode::kInvalidArgument, "input dtype fp16 must be the act dtype (bf16) or e2m1x2"},
      {"T > max_tokens", [](MoeParams& p) { p.num_tokens = 9; }, StatusCode::kInvalidArgument,
       "num_tokens (=9) must be <= max_tokens (=8)"},
      {"rows overflow int32", [](MoeParams& p) { p.max_tokens = int64_t(1) << 30; p.top_k = 2; },
       StatusCode::kInvalidArgument, "max(num_tokens, max_tokens) * top_k (=1073741824 * 2) must be < 2^31"},
      {"fc1 tactic", [](MoeParams& p) { p.fc1_tactic = 1000; }, StatusCode::kInvalidArgument,
       "fc1_tactic (=1000) is not a grouped GEMM tactic"},
      {"fc2 tactic", [](MoeParams& p) { p.fc2_tactic = -2; }, StatusCode::kInvalidArgument,
       "fc2_tactic (=-2) is not a grouped GEMM tactic"},
      {"fc1 weights null", [](MoeParams& p) { p.fc1_weights = nullptr; }, StatusCode::kInvalidArgument,
       "fc1_weights is null"},
      {"fc1 weights small", [](MoeParams& p) { p.fc1_weights_bytes -= 1; }, StatusCode::kBufferTooSmall,
       "fc1_weights holds"},
      {"fc1 weights misaligned", [](MoeParams& p) { p.fc1_weights = fake(0x100008); }, StatusCode::kMisaligned,
       "fc1_weights must be 16-byte aligned"},
      {"fc2 weights null", [](MoeParams& p) { p.fc2_weights = nullptr; }, StatusCode::kInvalidArgument,
       "fc2_weights is null"},
      {"fc2 weights small", [](MoeParams& p) { p.fc2_weights_bytes = 16; }, StatusCode::kBufferTooSmall,
       "fc2_weights holds 16 bytes, needs"},
      {"fc2 weights misaligned", [](MoeParams& p) { p.fc2_weights = fake(0x800004); }, StatusCode::kMisaligned,
       "fc2_weights must be 16-byte aligned"},
      {"fc1 alpha", [](MoeParams& p) { p.fc1_alpha = nullptr; }, StatusCode::kInvalidArgument, "fc1_alpha is null"},
      {"fc2 alpha", [](MoeParams& p) { p.fc2_alpha = nullptr; }, StatusCode::kInvalidArgument, "fc2_alpha is null"},
      {"W4A4 fc1 act global", [](MoeParams& p) { p.mode = MoeMode::kW4A4; p.fc1_act_global = nullptr; },
       StatusCode::kInvalidArgument, "fc1_act_global is null"},
      {"W4A4 fc2 act global", [](MoeParams& p) { p.mode = MoeMode::kW4A4; p.fc2_act_global = nullptr; },
       StatusCode::kInvalidArgument, "fc2_act_global is null"},
      {"input null", [](MoeParams& p) { p.input = nullptr; }, StatusCode::kInvalidArgument, "input is null"},
      {"input scales null",
       [](MoeParams& p) { p.mode = MoeMode::kW4A4; p.input_dtype = DType::kE2M1x2; p.input_scales = nullptr; },
       StatusCode::kInvalidArgument, "input_scales is null"},
      {"selected null", [](MoeParams& p) { p.selected_experts = nullptr; }, StatusCode::kInvalidArgument,
       "selected_experts is null"},
      {"scales null", [](MoeParams& p) { p.final_scales = nullptr; }, StatusCode::kInvalidArgument,
       "final_scales is null"},
      {"output null", [](MoeParams& p) { p.output = nullptr; }, StatusCode::kInvalidArgument, "output is null"},
      {"input misaligned", [](MoeParams& p) { p.input = fake(0x10002); }, StatusCode::kMisaligned,
       "input must be 16-byte aligned"},
      {"output misaligned", [](MoeParams& p) { p.output = fake(0x90008); }, StatusCode::kMisaligned,
       "output must be 16-byte aligned"},
      {"selected misaligned", [](MoeParams& p) { p.selected_experts = fake<const int32_t>(0x20002); },
       StatusCode::kMisaligned, "selected_experts must be 4-byte aligned"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    MoeParams p = valid_params();
    c.mutate(p);
    expect_error(run(p), c.code, c.needle);
  }
}

// Shapes past the GEMMs' n, k < 2^31 or past int32 expert ids: refused by name, and the workspace
// query (the same shape checks) gives 0 instead of a size for a problem fused_moe cannot run.
TEST(MoeApi, ShapesPastTheKernelLimits) {
  struct Case {
    const char* what;
    void (*mutate)(MoeParams&);
    const char* needle;
  };
  const Case cases[] = {
      {"hidden 2^31", [](MoeParams& p) { p.hidden = int64_t(1) << 31; },
       "hidden (=2147483648) and 2 * inter (inter = 192) must each be < 2^31"},
      {"2 * inter 2^31", [](MoeParams& p) { p.inter = int64_t(1) << 30; },
       "hidden (=128) and 2 * inter (inter = 1073741824) must each be < 2^31"},
      // 2 * inter would overflow int64.
      {"inter 2^62", [](MoeParams& p) { p.inter = int64_t(1) << 62; }, "inter = 4611686018427387904"},
      // 4 local experts, but the first (ep_rank * 4 = 2^32) is not an int32 id.
      {"E 2^33",
       [](MoeParams& p) {
         p.num_experts = int64_t(1) << 33;
         p.ep_size = int64_t(1) << 31;
         p.ep_rank = int64_t(1) << 30;
       },
       "num_experts (=8589934592) must be < 2^31 (expert ids are int32)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    MoeParams p = valid_params();
    c.mutate(p);
    EXPECT_EQ(moe_workspace_bytes(p), 0u);
    expect_error(fused_moe(p, fake(0x1000000), size_t(1) << 40, nullptr), StatusCode::kInvalidArgument, c.needle);
  }
}

TEST(MoeApi, FusedMoeWorkspaceChecks) {
  const MoeParams p = valid_params();
  const size_t need = moe_workspace_bytes(p);
  ASSERT_GT(need, 0u);
  expect_error(fused_moe(p, nullptr, need, nullptr), StatusCode::kInvalidArgument, "workspace is null");
  expect_error(fused_moe(p, fake(0x1000000), need - 1, nullptr), StatusCode::kBufferTooSmall,
               "workspace holds " + std::to_string(need - 1) + " bytes, needs " + std::to_string(need));
  expect_error(fused_moe(p, fake(0x1000008), need, nullptr), StatusCode::kMisaligned,
               "workspace must be 16-byte aligned");
  // A size_t capacity past INT64_MAX is a large workspace, not "-1 bytes" (compared unsigned): the
  // workspace check passes and the call goes on (here to the misalignment check).
  const Status huge = fused_moe(p, fake(0x1000008), SIZE_MAX, nullptr);
  EXPECT_EQ(huge.code(), StatusCode::kMisaligned) << huge.message();
}

TEST(MoeApi, EmptyBatchIsOk) {
  MoeParams p = valid_params();
  p.num_tokens = 0;
  p.input = nullptr;  // per-token buffers may be absent for an empty batch
  p.selected_experts = nullptr;
  p.final_scales = nullptr;
  p.output = nullptr;
  for (int64_t max_tokens : {0, 8}) {
    p.max_tokens = max_tokens;
    const Status s = fused_moe(p, nullptr, 0, nullptr);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  EXPECT_EQ(moe_workspace_bytes(p), moe_workspace_bytes([&] { MoeParams q = p; q.num_tokens = 8; return q; }()));
  p.max_tokens = 0;
  EXPECT_EQ(moe_workspace_bytes(p), 0u);
  // Shape errors are still reported for an empty batch.
  p.top_k = 9;
  expect_error(fused_moe(p, nullptr, 0, nullptr), StatusCode::kInvalidArgument, "top_k (=9) must be <= num_experts");
}

TEST(MoeApi, WorkspaceGrowsWithMaxTokensAndIgnoresT) {
  for (MoeMode mode : {MoeMode::kW4A16, MoeMode::kW4A4}) {
    MoeParams p = valid_params();
    p.mode = mode;
    p.num_tokens = 1;
    size_t prev = 0;
    for (int64_t m : {1, 2, 3, 7, 16, 64, 100, 2048, 2049, 5000, 20000}) {
      p.max_tokens = m;
      const size_t ws = moe_workspace_bytes(p);
      EXPECT_GE(ws, prev) << "max_tokens " << m;
      prev = ws;
      MoeParams q = p;
      q.num_tokens = m;  // T == max_tokens needs the same
      EXPECT_EQ(moe_workspace_bytes(q), ws);
      q.max_tokens = 0;  // max_tokens 0: sized from T
      EXPECT_EQ(moe_workspace_bytes(q), ws);
    }
  }
  MoeParams bad = valid_params();
  bad.hidden = 100;
  EXPECT_EQ(moe_workspace_bytes(bad), 0u);
}

TEST(MoeApi, WorkspaceLayoutRegions) {
  for (int64_t max_tokens : {1, 37, 600, 4096}) {
    for (int64_t e_local : {4, 128, 600, 2048}) {
      moe_impl::MoeDims d;
      d.tokens = 1;
      d.max_tokens = max_tokens;
      d.hidden = 256;
      d.inter = 192;
      d.experts = e_local * 2;
      d.top_k = 8;
      d.e_local = e_local;
      d.rows = 8;
      d.max_rows = max_tokens * 8;
      const moe_impl::MoeWorkspaceLayout l = moe_impl::moe_workspace_layout(d, 1000, 0, 132);
      const moe_impl::FusedDecodeWorkspace fd =
          moe_impl::fused_decode_workspace(max_tokens, 8, d.hidden, d.inter, e_local, 132);
      const size_t R = size_t(d.max_rows);
      struct Region {
        size_t at, bytes;
      };
      const bool multi = !moe_impl::use_fused_permute(d.max_rows, e_local);
      const size_t chunks = multi ? size_t(moe_impl::chunk_count(d.max_rows, e_local)) : 0;
      const std::vector<Region> regions = {
          {l.header, 16},
          {l.offsets, size_t(e_local + 1) * 4},
          {l.active, size_t(e_local) * 4},
          {l.perm, R * 4},
          {l.row_expert, R * 4},
          {l.chunk_counts, chunks * size_t(e_local) * 4},
          {l.chunk_flags, chunks * 4},
          {l.sync, size_t(fd.sync_words) * 4},
          {l.partials, size_t(fd.partial_floats) * 4},
          {l.act, R * 256 * 2},
          {l.gemm_out, R * 384 * 2},
          {l.gemm1_ws, 1000},
          {l.gemm2_ws, 0},
      };
      for (size_t i = 0; i < regions.size(); ++i) {
        EXPECT_EQ(regions[i].at % 256, 0u) << i;
        EXPECT_LE(regions[i].at + regions[i].bytes, l.total) << i;
        if (i + 1 < regions.size()) EXPECT_LE(regions[i].at + regions[i].bytes, regions[i + 1].at) << i;
      }
      if (multi) {
        // Every chunk holds at most chunk_entries entries and the table fits in shared memory.
        EXPECT_LE(int64_t(moe_impl::chunk_warps(e_local)) * e_local, moe_impl::kTableEntries);
        EXPECT_GE(int64_t(chunks) * moe_impl::chunk_entries(e_local), d.max_rows);
      }
    }
  }
}

TEST(MoeApi, PermutePathLimits) {
  EXPECT_TRUE(moe_impl::use_fused_permute(1, 1));
  EXPECT_TRUE(moe_impl::use_fused_permute(4096, 512));
  EXPECT_FALSE(moe_impl::use_fused_permute(4097, 512));
  EXPECT_FALSE(moe_impl::use_fused_permute(8, 513));
  EXPECT_EQ(moe_impl::chunk_warps(256), 16);
  EXPECT_EQ(moe_impl::chunk_warps(2048), 8);
  EXPECT_EQ(moe_impl::chunk_warps(16384), 1);
  EXPECT_EQ(moe_impl::chunk_entries(256), 4096);
  EXPECT_EQ(moe_impl::chunk_count(4097, 256), 2);
}

// The grouped GEMM workspace reserved for max_tokens covers the heuristic's (and every fixed
// tactic's) requirement at every T <= max_tokens.
TEST(MoeApi, GroupedWorkspaceBoundCoversEveryT) {
  const int64_t max_tokens = 300, top_k = 8;
  for (int64_t groups : {8, 256}) {
    for (int tactic = -1; tactic < gemm_impl::grouped_gemm_tactic_count(); ++tactic) {
      moe_impl::MoeGemm mg;
      mg.shape = GroupedGemmShape{1024, 2048, groups, groups, top_k};
      mg.tactic = tactic;
      const size_t bound = moe_impl::grouped_workspace_bound(mg, max_tokens, nullptr);
      gemm_impl::GroupedGemmParams g;
      g.groups = groups;
      g.n = 1024;
      g.k = 2048;
      g.a_dtype = DType::kBF16;
      g.tactic = tactic;
      for (int64_t t = 1; t <= max_tokens; ++t) {
        g.max_rows = t * top_k;
        g.max_group_rows = t;
        ASSERT_LE(gemm_impl::grouped_gemm_workspace_bytes(g), bound) << "groups " << groups << " tactic " << tactic
                                                                     << " T " << t;
      }
    }
  }
}

TEST(MoeApi, PrepackedWeightBytes) {
  EXPECT_EQ(moe_prepacked_weight_bytes(8, 384, 128), 8 * prepacked_weight_bytes(384, 128));
  EXPECT_EQ(moe_prepacked_weight_bytes(1, 100, 48), prepacked_weight_bytes(100, 48));
  EXPECT_EQ(moe_prepacked_weight_bytes(0, 64, 64), 0);
  EXPECT_EQ(moe_prepacked_weight_bytes(4, 0, 64), 0);
  EXPECT_EQ(moe_prepacked_weight_bytes(int64_t(1) << 40, int64_t(1) << 20, int64_t(1) << 20), 0);  // overflow
}

TEST(MoeApi, PrepackRejectsBadArguments) {
  MoeWeightPrepackParams p;
  p.experts = 4;
  p.n = 128;
  p.k = 64;
  p.codes = fake<const uint8_t>(0x1000);
  p.scales = fake<const uint8_t>(0x2000);
  p.out = fake(0x10000);
  p.out_bytes = moe_prepacked_weight_bytes(4, 128, 64);
  auto expect = [](MoeWeightPrepackParams q, StatusCode code, const std::string& needle) {
    const Status s = prepack_moe_weights(q, nullptr);
    EXPECT_EQ(s.code(), code) << s.to_string();
    EXPECT_NE(s.message().find("prepack_moe_weights: " + needle), std::string::npos) << s.message();
  };
  {
    auto q = p;
    q.experts = 0;
    expect(q, StatusCode::kInvalidArgument, "experts (=0) must be positive");
  }
  {
    auto q = p;
    q.k = 40;
    expect(q, StatusCode::kInvalidArgument, "k (=40) must be a multiple of 16");
  }
  {
    // Past the GEMMs' limit (prepacked_weight_bytes is 0 there): not a 64-bit overflow.
    auto q = p;
    q.n = int64_t(1) << 31;
    expect(q, StatusCode::kInvalidArgument, "n (=2147483648) and k (=64) must each be < 2^31");
  }
  {
    auto q = p;
    q.scale_layout = ScaleLayout::kSwizzled8x4;
    expect(q, StatusCode::kNotSupported, "scale_layout 8x4 is an activation layout");
  }
  {
    auto q = p;
    q.codes = nullptr;
    expect(q, StatusCode::kInvalidArgument, "codes is null");
  }
  {
    auto q = p;
    q.out = fake(0x10004);
    expect(q, StatusCode::kMisaligned, "out must be 16-byte aligned");
  }
  {
    auto q = p;
    q.out_bytes -= 16;
    expect(q, StatusCode::kBufferTooSmall, "out holds");
  }
}

TEST(MoeApi, RouteRejectsBadArguments) {
  MoeRoutingParams p;
  p.num_tokens = 3;
  p.num_experts = 64;
  p.top_k = 4;
  p.logits = fake(0x1000);
  p.selected_experts = fake<int32_t>(0x2000);
  p.final_scales = fake<float>(0x3000);
  p.bias = fake<const float>(0x4000);
  auto expect = [](MoeRoutingParams q, StatusCode code, const std::string& needle) {
    const Status s = moe_route(q, nullptr);
    EXPECT_EQ(s.code(), code) << s.to_string();
    EXPECT_NE(s.message().find("moe_route: " + needle), std::string::npos) << s.message();
  };
  {
    auto q = p;
    q.top_k = 65;
    expect(q, StatusCode::kInvalidArgument, "top_k (=65) must be <= num_experts (=64)");
  }
  {
    auto q = p;
    q.top_k = 17;
    expect(q, StatusCode::kNotSupported, "top_k (=17) must be <= 16");
  }
  {
    auto q = p;
    q.num_experts = 513;
    expect(q, StatusCode::kNotSupported, "num_experts (=513) must be <= 512");
  }
  {
    auto q = p;
    q.num_tokens = -1;
    expect(q, StatusCode::kInvalidArgument, "num_tokens (=-1) must not be negative");
  }
  {
    auto q = p;
    q.logits_dtype = DType::kFP16;
    expect(q, StatusCode::kInvalidArgument, "logits dtype fp16 not supported");
  }
  {
    auto q = p;
    q.method = static_cast<MoeRoutingMethod>(9);
    expect(q, StatusCode::kInvalidArgument, "method (=9) is not a MoeRoutingMethod");
  }
  {
    auto q = p;
    q.logits = nullptr;
    expect(q, StatusCode::kInvalidArgument, "logits is null");
  }
  {
    auto q = p;
    q.final_scales = nullptr;
    expect(q, StatusCode::kInvalidArgument, "final_scales is null");
  }
  {
    auto q = p;
    q.method = MoeRoutingMethod::kDeepSeekV3;
    q.bias = nullptr;
    q.n_group = 8;
    q.topk_group = 4;
    expect(q, StatusCode::kInvalidArgument, "bias is null");
  }
  {
    auto q = p;
    q.method = MoeRoutingMethod::kDeepSeekV3;
    q.n_group = 5;
    expect(q, StatusCode::kInvalidArgument, "num_experts (=64) must be a multiple of n_group (=5)");
  }
  {
    auto q = p;
    q.method = MoeRoutingMethod::kDeepSeekV3;
    q.n_group = 8;
    q.topk_group = 9;
    expect(q, StatusCode::kInvalidArgument, "topk_group (=9) must be in [1, n_group (=8)]");
  }
  {
    auto q = p;
    q.method = MoeRoutingMethod::kDeepSeekV3;
    q.n_group = 32;  // groups of 2
    q.topk_group = 1;
    q.top_k = 3;
    expect(q, StatusCode::kInvalidArgument, "top_k (=3) must be <= topk_group * num_experts / n_group (=2)");
  }
  {
    auto q = p;
    q.method = MoeRoutingMethod::kDeepSeekV3;
    q.n_group = 8;
    q.topk_group = 4;
    q.bias = fake<const float>(0x4002);  // read as floats
    const Status s = moe_route(q, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kMisaligned) << s.to_string();
  }
  {
    auto q = p;  // an empty batch needs no buffers
    q.num_tokens = 0;
    q.logits = nullptr;
    q.selected_experts = nullptr;
    q.final_scales = nullptr;
    const Status s = moe_route(q, nullptr);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
}

}  // namespace
