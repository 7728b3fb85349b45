// The public grouped GEMM (fp4kit/grouped_gemm.h). Everywhere: argument validation, the CPU
// reference against the dense reference run group by group (W4A4's 128x4 scales included), the
// reference's offsets rule. On an sm_90a GPU: every grouped tactic in W4A16 and W4A4 against the
// reference on ragged groups, rows outside every group left untouched, bit-identical reruns,
// invalid device offsets (reported with check_offsets, nothing written either way), CUDA graphs.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/device_buffer.h"
#include "common/gpu_test.h"
#include "format/e4m3.h"
#include "format/float16.h"
#include "fp4kit/grouped_gemm.h"
#include "fp4kit/layout.h"
#include "fp4kit/reference.h"

using namespace fp4kit;

namespace {

constexpr uint16_t kPoison = 0xFFFF;  // a NaN in BF16 and FP16

double to_double(uint16_t v, DType t) { return t == DType::kBF16 ? format::bf16_to_float(v) : format::fp16_to_float(v); }

// A grouped problem with random data in the checkpoint layout (host side).
struct Problem {
  int64_t groups = 0, n = 0, k = 0, max_rows = 0, max_group_rows = 0;
  DType a_dtype = DType::kBF16, d_dtype = DType::kBF16;
  std::vector<int32_t> offsets;
  std::vector<uint16_t> a16;                 // W4A16: [max_rows, k]
  std::vector<uint8_t> a_codes, a_scales;    // W4A4: [max_rows, k/2], 128x4 over max_rows
  std::vector<uint8_t> b_codes, b_scales;    // [G, n, k/2], [G, n, k/16] linear
  std::vector<float> alpha;

  bool w4a4() const { return a_dtype == DType::kE2M1x2; }
  int64_t used_rows() const { return offsets.back(); }
};

uint8_t random_scale(std::mt19937& rng, bool allow_zero_and_sign) {
  std::uniform_real_distribution<float> mag(0.125f, 2.0f);
  const uint32_t r = rng();
  if (allow_zero_and_sign && r % 64 == 0) return 0;
  return uint8_t(format::float_to_e4m3(mag(rng)) | (allow_zero_and_sign && (r & 1) ? 0x80 : 0));
}

Problem make_problem(int64_t n, int64_t k, const std::vector<int>& rows, DType a_dtype, DType d_dtype, int extra_rows,
                     uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p;
  p.groups = int64_t(rows.size());
  p.n = n;
  p.k = k;
  p.a_dtype = a_dtype;
  p.d_dtype = d_dtype;
  p.offsets.assign(rows.size() + 1, 0);
  for (size_t g = 0; g < rows.size(); ++g) {
    p.offsets[g + 1] = p.offsets[g] + rows[g];
    p.max_group_rows = std::max<int64_t>(p.max_group_rows, rows[g]);
  }
  p.max_rows = p.used_rows() + extra_rows;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  if (p.w4a4()) {
    p.a_codes.resize(size_t(p.max_rows * k / 2));
    for (auto& b : p.a_codes) b = uint8_t(rng());
    p.a_scales.resize(size_t(scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, p.max_rows, k)));
    for (auto& s : p.a_scales) s = random_scale(rng, false);
  } else {
    p.a16.resize(size_t(p.max_rows * k));
    for (auto& x : p.a16) x = a_dtype == DType::kBF16 ? format::float_to_bf16(nd(rng)) : format::float_to_fp16(nd(rng));
  }
  p.b_codes.resize(size_t(p.groups * n * k / 2));
  for (auto& b : p.b_codes) b = uint8_t(rng());
  p.b_scales.resize(size_t(p.groups * n * (k / 16)));
  for (auto& s : p.b_scales) s = random_scale(rng, true);
  p.alpha.resize(size_t(p.groups));
  std::uniform_real_distribution<float> mag(0.125f, 2.0f);
  for (auto& x : p.alpha) x = std::ldexp(mag(rng), -4);
  return p;
}

reference::GroupedGemmRefParams ref_params(const Problem& p, std::vector<uint16_t>& d) {
  reference::GroupedGemmRefParams r;
  r.groups = p.groups;
  r.max_rows = p.max_rows;
  r.max_group_rows = p.max_group_rows;
  r.n = p.n;
  r.k = p.k;
  r.a_dtype = p.a_dtype;
  r.a = p.w4a4() ? static_cast<const void*>(p.a_codes.data()) : p.a16.data();
  r.a_scales = p.w4a4() ? p.a_scales.data() : nullptr;
  r.group_offsets = p.offsets.data();
  r.b = p.b_codes.data();
  r.b_scales = p.b_scales.data();
  r.alpha = p.alpha.data();
  r.d = d.data();
  r.d_dtype = p.d_dtype;
  return r;
}

// ---- everywhere -------------------------------------------------------------------------------------

// The grouped reference equals the dense reference over all max_rows rows with group g's weights
// and alpha, restricted to group g's rows: this checks the W4A4 scale extraction from the 128x4
// layout of groups that start anywhere (and cross 128-row atoms).
TEST(GroupedGemmReference, MatchesDenseReferencePerGroup) {
  for (DType a_dtype : {DType::kBF16, DType::kE2M1x2}) {
    const Problem p = make_problem(40, 96, {3, 0, 130, 1, 9}, a_dtype, DType::kBF16, 4, 11);
    std::vector<uint16_t> d(size_t(p.max_rows * p.n), kPoison);
    ASSERT_TRUE(reference::grouped_gemm(ref_params(p, d)).is_ok());
    for (int64_t g = 0; g < p.groups; ++g) {
      std::vector<uint16_t> full(size_t(p.max_rows * p.n));
      reference::GemmRefParams rp;
      rp.m = p.max_rows;
      rp.n = p.n;
      rp.k = p.k;
      rp.a_dtype = a_dtype;
      rp.a = p.w4a4() ? static_cast<const void*>(p.a_codes.data()) : p.a16.data();
      rp.a_scales = p.w4a4() ? p.a_scales.data() : nullptr;
      rp.a_scale_layout = ScaleLayout::kSwizzled128x4;
      rp.b = p.b_codes.data() + g * p.n * p.k / 2;
      rp.b_scales = p.b_scales.data() + g * p.n * (p.k / 16);
      rp.b_scale_layout = ScaleLayout::kLinear;
      rp.alpha = p.alpha[size_t(g)];
      rp.d = full.data();
      ASSERT_TRUE(reference::gemm(rp).is_ok());
      for (int64_t r = p.offsets[size_t(g)]; r < p.offsets[size_t(g) + 1]; ++r)
        ASSERT_EQ(0, std::memcmp(&full[size_t(r * p.n)], &d[size_t(r * p.n)], size_t(p.n) * 2))
            << dtype_name(a_dtype) << " group " << g << " row " << r;
    }
    for (int64_t r = p.used_rows(); r < p.max_rows; ++r)
      for (int64_t j = 0; j < p.n; ++j) ASSERT_EQ(d[size_t(r * p.n + j)], kPoison) << "row " << r << " written";
  }
}

TEST(GroupedGemmReference, RejectsInvalidOffsets) {
  Problem p = make_problem(16, 32, {2, 3, 1}, DType::kBF16, DType::kBF16, 2, 12);
  std::vector<uint16_t> d(size_t(p.max_rows * p.n), kPoison);
  const std::vector<std::vector<int32_t>> bad = {{1, 2, 5, 6}, {0, 3, 2, 6}, {0, 2, 5, 9}};
  for (const auto& o : bad) {
    p.offsets = o;
    const Status s = reference::grouped_gemm(ref_params(p, d));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  }
  p.offsets = {0, 2, 5, 6};
  p.max_group_rows = 2;  // group 1 has 3 rows
  EXPECT_EQ(reference::grouped_gemm(ref_params(p, d)).code(), StatusCode::kInvalidArgument);
  for (uint16_t v : d) ASSERT_EQ(v, kPoison);
}

GroupedGemmParams valid_params() {
  alignas(256) static uint8_t dummy[1024];
  GroupedGemmParams p;
  p.groups = 3;
  p.max_rows = 8;
  p.n = 64;
  p.k = 64;
  p.a = dummy;
  p.group_offsets = reinterpret_cast<const int32_t*>(dummy);
  p.b_prepacked = dummy;
  p.b_prepacked_bytes = 3 * prepacked_weight_bytes(64, 64);
  p.alpha = reinterpret_cast<const float*>(dummy);
  p.d = dummy;
  return p;
}

TEST(GroupedGemmApi, ValidatesArguments) {
  const GroupedGemmParams p = valid_params();
  EXPECT_TRUE(grouped_gemm_tactic_can_implement(0, p).is_ok());
  EXPECT_GT(grouped_gemm_workspace_bytes(p), 0u);
  EXPECT_GE(grouped_gemm_default_tactic(p), 0);
  const std::vector<GemmTacticInfo> tactics = grouped_gemm_tactics();
  ASSERT_FALSE(tactics.empty());
  for (size_t i = 0; i < tactics.size(); ++i) {
    EXPECT_EQ(tactics[i].id, int(i));
    EXPECT_EQ(tactics[i].name.rfind("grouped_", 0), 0u) << tactics[i].name;
  }

  struct Bad {
    const char* what;
    void (*edit)(GroupedGemmParams&);
    StatusCode code;
    const char* needle;
  };
  const Bad cases[] = {
      {"no groups", [](GroupedGemmParams& q) { q.groups = 0; }, StatusCode::kInvalidArgument, "groups"},
      {"k not a block multiple", [](GroupedGemmParams& q) { q.k = 40; }, StatusCode::kInvalidArgument, "k"},
      {"negative max_rows", [](GroupedGemmParams& q) { q.max_rows = -1; }, StatusCode::kInvalidArgument, "max_rows"},
      {"W4A16 output dtype", [](GroupedGemmParams& q) { q.d_dtype = DType::kFP16; }, StatusCode::kNotSupported, "dtype"},
      {"FP32 activations", [](GroupedGemmParams& q) { q.a_dtype = DType::kFP32; }, StatusCode::kInvalidArgument, "a"},
      {"weights too small", [](GroupedGemmParams& q) { q.b_prepacked_bytes -= 1; }, StatusCode::kBufferTooSmall,
       "b_prepacked"},
      {"no offsets", [](GroupedGemmParams& q) { q.group_offsets = nullptr; }, StatusCode::kInvalidArgument,
       "group_offsets"},
      {"no alpha", [](GroupedGemmParams& q) { q.alpha = nullptr; }, StatusCode::kInvalidArgument, "alpha"},
      {"lda < k", [](GroupedGemmParams& q) { q.lda = 32; }, StatusCode::kInvalidArgument, "lda"},
      {"ldd < n", [](GroupedGemmParams& q) { q.ldd = 8; }, StatusCode::kInvalidArgument, "ldd"},
      {"W4A4 without scales", [](GroupedGemmParams& q) { q.a_dtype = DType::kE2M1x2; }, StatusCode::kInvalidArgument,
       "a_scales"},
      {"W4A4 lda", [](GroupedGemmParams& q) {
         q.a_dtype = DType::kE2M1x2;
         q.a_scales = static_cast<const uint8_t*>(q.a);
         q.lda = 80;
       }, StatusCode::kInvalidArgument, "lda"},
      {"unknown tactic", [](GroupedGemmParams& q) { q.tactic = 99; }, StatusCode::kInvalidArgument, "tactic"},
      {"misaligned A", [](GroupedGemmParams& q) { q.a = static_cast<const uint8_t*>(q.a) + 2; },
       StatusCode::kMisaligned, "a"},
  };
  for (const Bad& b : cases) {
    GroupedGemmParams q = p;
    b.edit(q);
    const Status s = grouped_gemm(q, nullptr, 0, nullptr);
    EXPECT_EQ(s.code(), b.code) << b.what << ": " << s.to_string();
    EXPECT_NE(s.message().find(b.needle), std::string::npos) << b.what << ": " << s.message();
    EXPECT_EQ(grouped_gemm_workspace_bytes(q), 0u) << b.what;
    EXPECT_EQ(grouped_gemm_default_tactic(q), -1) << b.what;
  }
  // Too small a workspace is refused before anything runs (no GPU needed).
  const Status s = grouped_gemm(p, nullptr, 0, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  alignas(256) static uint8_t ws[256];
  EXPECT_EQ(grouped_gemm(p, ws, 16, nullptr).code(), StatusCode::kBufferTooSmall);
  // An empty problem needs nothing, not even pointers.
  GroupedGemmParams e;
  e.groups = 4;
  e.n = 64;
  e.k = 64;
  e.b_prepacked = p.b_prepacked;
  e.b_prepacked_bytes = 4 * prepacked_weight_bytes(64, 64);
  e.alpha = p.alpha;
  EXPECT_TRUE(grouped_gemm(e, nullptr, 0, nullptr).is_ok());
  EXPECT_EQ(grouped_gemm_workspace_bytes(e), 0u);
  // The wgmma tactics take at most 1024 groups.
  GroupedGemmParams many = p;
  many.groups = 2000;
  many.b_prepacked_bytes = 2000 * prepacked_weight_bytes(64, 64);
  EXPECT_EQ(grouped_gemm_tactic_can_implement(5, many).code(), StatusCode::kNotSupported);
}

// ---- on the GPU -------------------------------------------------------------------------------------

struct DeviceProblem {
  DeviceBuffer<uint8_t> a, a_scales, packed;
  DeviceBuffer<int32_t> offsets;
  DeviceBuffer<float> alpha;
  DeviceBuffer<uint16_t> d;
  explicit DeviceProblem(const Problem& p)
      : a(p.w4a4() ? p.a_codes.size() : p.a16.size() * 2),
        a_scales(std::max<size_t>(p.a_scales.size(), 1)),
        packed(size_t(p.groups * prepacked_weight_bytes(p.n, p.k))),
        offsets(p.offsets.size()),
        alpha(p.alpha.size()),
        d(size_t(p.max_rows * p.n)) {
    if (p.w4a4()) {
      a.upload(p.a_codes);
      a_scales.upload(p.a_scales);
    } else {
      std::vector<uint8_t> bytes(p.a16.size() * 2);
      std::memcpy(bytes.data(), p.a16.data(), bytes.size());
      a.upload(bytes);
    }
    offsets.upload(p.offsets);
    alpha.upload(p.alpha);
    DeviceBuffer<uint8_t> codes(p.b_codes.size()), scales(p.b_scales.size());
    codes.upload(p.b_codes);
    scales.upload(p.b_scales);
    const int64_t per_group = prepacked_weight_bytes(p.n, p.k);
    for (int64_t g = 0; g < p.groups; ++g) {
      WeightPrepackParams pp;
      pp.n = p.n;
      pp.k = p.k;
      pp.codes = codes.ptr + g * p.n * p.k / 2;
      pp.scales = scales.ptr + g * p.n * (p.k / 16);
      pp.scale_layout = ScaleLayout::kLinear;
      pp.out = packed.ptr + g * per_group;
      pp.out_bytes = per_group;
      const Status s = prepack_weights(pp, nullptr);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
    }
  }
  GroupedGemmParams params(const Problem& p) const {
    GroupedGemmParams q;
    q.groups = p.groups;
    q.max_rows = p.max_rows;
    q.max_group_rows = p.max_group_rows;
    q.n = p.n;
    q.k = p.k;
    q.a_dtype = p.a_dtype;
    q.a = a.ptr;
    q.a_scales = p.w4a4() ? a_scales.ptr : nullptr;
    q.group_offsets = offsets.ptr;
    q.b_prepacked = packed.ptr;
    q.b_prepacked_bytes = int64_t(packed.count);
    q.alpha = alpha.ptr;
    q.d = d.ptr;
    q.d_dtype = p.d_dtype;
    return q;
  }
};

// Rows of the groups within 2e-3 (relative L2) of the reference and finite; rows past the last
// group still poisoned.
void expect_matches(const std::vector<uint16_t>& out, const std::vector<uint16_t>& ref, const Problem& p,
                    const std::string& what) {
  double num = 0, den = 0;
  int64_t bad = 0;
  for (int64_t r = 0; r < p.max_rows; ++r)
    for (int64_t j = 0; j < p.n; ++j) {
      const uint16_t o = out[size_t(r * p.n + j)];
      if (r >= p.used_rows()) {
        bad += o != kPoison;
        continue;
      }
      const double x = to_double(o, p.d_dtype), y = to_double(ref[size_t(r * p.n + j)], p.d_dtype);
      bad += !std::isfinite(x);
      num += (x - y) * (x - y);
      den += y * y;
    }
  EXPECT_EQ(bad, 0) << what << ": non-finite or stray outputs";
  if (den > 0) EXPECT_LE(std::sqrt(num / den), 2e-3) << what;
}

void run_every_tactic(const Problem& p, const std::string& label) {
  std::vector<uint16_t> ref(size_t(p.max_rows * p.n), kPoison);
  ASSERT_TRUE(reference::grouped_gemm(ref_params(p, ref)).is_ok());
  DeviceProblem dev(p);
  for (int tactic = -1; tactic < int(grouped_gemm_tactics().size()); ++tactic) {
    GroupedGemmParams q = dev.params(p);
    q.tactic = tactic;
    q.check_offsets = tactic % 2 == 0;  // both ways
    const std::string what = label + " tactic " + std::to_string(tactic);
    if (tactic >= 0 && !grouped_gemm_tactic_can_implement(tactic, q).is_ok()) continue;
    const size_t ws_bytes = grouped_gemm_workspace_bytes(q);
    DeviceBuffer<uint8_t> ws(ws_bytes);
    std::vector<uint16_t> first;
    for (int rep = 0; rep < 2; ++rep) {
      dev.d.poison();
      const Status s = grouped_gemm(q, ws.ptr, ws_bytes, nullptr);
      ASSERT_TRUE(s.is_ok()) << what << ": " << s.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
      const std::vector<uint16_t> out = dev.d.download();
      if (rep == 1) {
        EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * 2)) << what << ": rerun not bit-identical";
        break;
      }
      first = out;
      expect_matches(out, ref, p, what);
    }
  }
}

TEST(GroupedGemmGpuApi, EveryTacticW4A16AndW4A4) {
  FP4KIT_REQUIRE_SM90A();
  // Few rows per group (decode tactics), empty groups, ragged n / k; many rows (wgmma tactics).
  run_every_tactic(make_problem(200, 144, {1, 0, 3, 8, 0}, DType::kBF16, DType::kBF16, 5, 1), "w4a16 bf16 small");
  run_every_tactic(make_problem(128, 256, {2, 1, 17, 0, 1}, DType::kFP16, DType::kFP16, 3, 2), "w4a16 fp16 small");
  run_every_tactic(make_problem(320, 528, {130, 0, 300}, DType::kBF16, DType::kBF16, 7, 3), "w4a16 bf16 large");
  run_every_tactic(make_problem(200, 160, {1, 0, 3, 8, 0}, DType::kE2M1x2, DType::kBF16, 5, 4), "w4a4 bf16 small");
  run_every_tactic(make_problem(256, 1088, {64, 257, 1, 128}, DType::kE2M1x2, DType::kFP16, 2, 5), "w4a4 fp16 large");
  // More groups than the offsets kernel's 1024 threads (its list runs in rounds).
  std::vector<int> rows(1500, 0);
  std::mt19937 rng(6);
  for (auto& r : rows) r = rng() % 3 == 0 ? int(rng() % 4) : 0;
  Problem many = make_problem(64, 64, rows, DType::kBF16, DType::kBF16, 1, 6);
  std::vector<uint16_t> ref(size_t(many.max_rows * many.n), kPoison);
  ASSERT_TRUE(reference::grouped_gemm(ref_params(many, ref)).is_ok());
  DeviceProblem dev(many);
  for (int tactic : {-1, 0, 9}) {  // the wgmma tactics take at most 1024 groups
    GroupedGemmParams q = dev.params(many);
    q.tactic = tactic;
    const size_t ws_bytes = grouped_gemm_workspace_bytes(q);
    DeviceBuffer<uint8_t> ws(ws_bytes);
    dev.d.poison();
    const Status s = grouped_gemm(q, ws.ptr, ws_bytes, nullptr);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    expect_matches(dev.d.download(), ref, many, "1500 groups, tactic " + std::to_string(tactic));
  }
}

// Invalid device offsets, W4A16 and W4A4, through the heuristic's dp decode, the stream-K decode and
// a wgmma tactic: reported with check_offsets, and nothing written either way.
void expect_invalid_offsets_write_nothing(DType a_dtype, int tactic) {
  const Problem p = make_problem(64, 64, {2, 3, 1}, a_dtype, DType::kBF16, 2, 7);
  DeviceProblem dev(p);
  const std::string what = std::string(dtype_name(a_dtype)) + " tactic " + std::to_string(tactic);
  const std::vector<std::pair<std::vector<int32_t>, int>> bad = {
      {{1, 2, 5, 6}, 0}, {{0, 3, 2, 6}, 2}, {{0, 2, 5, 9}, 3}, {{0, 2, 5, -1}, 3}};
  for (const auto& [offsets, index] : bad) {
    dev.offsets.upload(offsets);
    for (bool check : {true, false}) {
      GroupedGemmParams q = dev.params(p);
      q.tactic = tactic;
      q.check_offsets = check;
      const size_t ws_bytes = grouped_gemm_workspace_bytes(q);
      DeviceBuffer<uint8_t> ws(ws_bytes);
      dev.d.poison();
      const Status s = grouped_gemm(q, ws.ptr, ws_bytes, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
      if (check) {
        EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what << ": " << s.to_string();
        EXPECT_NE(s.message().find("group_offsets[" + std::to_string(index) + "]"), std::string::npos) << s.message();
      } else {
        EXPECT_TRUE(s.is_ok()) << what << ": " << s.to_string();
      }
      for (uint16_t v : dev.d.download()) ASSERT_EQ(v, kPoison) << what << " check_offsets " << check;
    }
  }
  // A group longer than max_group_rows.
  dev.offsets.upload(p.offsets);
  GroupedGemmParams q = dev.params(p);
  q.tactic = tactic;
  q.max_group_rows = 2;
  const size_t ws_bytes = grouped_gemm_workspace_bytes(q);
  DeviceBuffer<uint8_t> ws(ws_bytes);
  EXPECT_EQ(grouped_gemm(q, ws.ptr, ws_bytes, nullptr).code(), StatusCode::kInvalidArgument) << what;
}

TEST(GroupedGemmGpuApi, InvalidOffsetsWriteNothing) {
  FP4KIT_REQUIRE_SM90A();
  for (DType a_dtype : {DType::kBF16, DType::kE2M1x2})
    for (int tactic : {-1, 0, 4}) expect_invalid_offsets_write_nothing(a_dtype, tactic);
}

// Both families: 1..3 rows per group (decode tactics, launched with PDL behind the offsets check and
// the W4A4 staging) and ~16 rows (wgmma).
class GroupedGemmGpuGraph : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(GroupedGemmGpuGraph, CapturesWithoutTheCheck) {
  FP4KIT_REQUIRE_SM90A();
  const Problem p = make_problem(256, 512, GetParam(), DType::kE2M1x2, DType::kBF16, 3, 8);
  std::vector<uint16_t> ref(size_t(p.max_rows * p.n), kPoison);
  ASSERT_TRUE(reference::grouped_gemm(ref_params(p, ref)).is_ok());
  DeviceProblem dev(p);
  GroupedGemmParams q = dev.params(p);
  const size_t ws_bytes = grouped_gemm_workspace_bytes(q);
  DeviceBuffer<uint8_t> ws(ws_bytes);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status refused = grouped_gemm(q, ws.ptr, ws_bytes, stream);  // check_offsets would synchronize
  q.check_offsets = false;
  q.enable_pdl = true;
  const Status captured = grouped_gemm(q, ws.ptr, ws_bytes, stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.to_string();
  ASSERT_TRUE(captured.is_ok()) << captured.to_string();
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  dev.d.poison();
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_matches(dev.d.download(), ref, p, "graph replay");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

INSTANTIATE_TEST_SUITE_P(Rows, GroupedGemmGpuGraph,
                         ::testing::Values(std::vector<int>{1, 0, 3, 2, 1, 1}, std::vector<int>{5, 0, 40, 3}));

}  // namespace
