// Grouped GEMM (fused MoE) entries of the tuning cache (CPU only): key bucketing, JSON round trip,
// files written before grouped entries existed, stale and malformed grouped entries, entries of
// unknown operations kept verbatim.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fp4kit/device.h"
#include "fp4kit/tune.h"
#include "gemm/grouped.h"

namespace fp4kit {
namespace {

namespace fs = std::filesystem;

TuneDevice h100() { return TuneDevice{"NVIDIA H100 80GB HBM3", 132, 90, version()}; }

// DeepSeek-V3's FC1: 256 experts of [2 * 2048, 7168], top 8.
constexpr GroupedGemmShape kFc1{4096, 7168, 256, 256, 8};

class GroupedCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fp4kit_grouped_tune_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/tune.json";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The default validator: the real gemm and grouped tactic tables.
  std::unique_ptr<TuneCache> open(std::vector<std::string>* warnings = nullptr) {
    return std::make_unique<TuneCache>(path_, h100(), TuneCache::TacticValidator{}, [warnings](const std::string& w) {
      if (warnings) warnings->push_back(w);
    });
  }
  static TuneEntry grouped(const GroupedGemmShape& s, int64_t tokens, int tactic, DType a = DType::kBF16,
                           DType d = DType::kBF16) {
    TuneEntry e;
    e.key = grouped_gemm_tune_key(s, a, d, tokens);
    e.tactic = tactic;
    const gemm_impl::GroupedTactic* t = gemm_impl::grouped_gemm_tactic(tactic);
    e.tactic_name = t ? t->name : "no_such_tactic";
    e.us = 10.0 + tactic;
    return e;
  }
  static TuneEntry dense(int64_t n, int64_t k, int64_t bucket, int tactic) {
    TuneEntry e;
    e.key = TuneKey{"gemm", DType::kBF16, DType::kBF16, n, k, bucket};
    e.tactic = tactic;
    e.tactic_name = gemm_tactics().at(size_t(tactic)).name;
    e.us = 1.0;
    return e;
  }
  void write(const std::string& text) { std::ofstream(path_, std::ios::binary) << text; }
  std::string read() {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static std::string entry_json(const std::string& op, const std::string& extra, int tactic, const std::string& name) {
    return R"({"gpu":"NVIDIA H100 80GB HBM3","sm_count":132,"compute_capability":90,"fp4kit_version":")" +
           std::string(version()) + R"(","op":")" + op +
           R"(","a_dtype":"bf16","d_dtype":"bf16","n":4096,"k":7168,"m_bucket":16,)" + extra + R"("tactic":)" +
           std::to_string(tactic) + R"(,"tactic_name":")" + name + R"(","us":12.5})";
  }
  static std::string file_of(const std::vector<std::string>& entries) {
    std::string s = R"({"format":"fp4kit-tune-cache","format_version":1,"entries":[)";
    for (size_t i = 0; i < entries.size(); ++i) s += (i ? "," : "") + entries[i];
    return s + "]}";
  }

  std::string dir_, path_;
};

TEST(GroupedTuneKey, BucketsTokensLikeTheDenseM) {
  for (int64_t t : {1, 2, 3, 5, 16, 17, 255, 257, 300, 2049, 4097, 5000, 16384}) {
    const TuneKey k = grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, t);
    EXPECT_EQ(k.op, "grouped_gemm");
    EXPECT_EQ(k.m_bucket, tune_m_bucket(t)) << t;
    EXPECT_GE(k.m_bucket, t);
    EXPECT_EQ(k.n, 4096);
    EXPECT_EQ(k.k, 7168);
    EXPECT_EQ(k.groups, 256);
    EXPECT_EQ(k.experts, 256);
    EXPECT_EQ(k.top_k, 8);
  }
  EXPECT_EQ(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 3).m_bucket, 4);
  EXPECT_EQ(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 300).m_bucket, 512);
  EXPECT_EQ(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 5000).m_bucket, 8192);
  // Every T of a bucket shares the key; the next T does not.
  EXPECT_EQ(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 9),
            grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 16));
  EXPECT_NE(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 16),
            grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 17));
  // W4A4 keys carry e2m1x2 as the dense W4A4 keys do.
  EXPECT_EQ(grouped_gemm_tune_key(kFc1, DType::kE2M1x2, DType::kBF16, 1).a_dtype, DType::kE2M1x2);
}

TEST(GroupedTuneKey, MoeLayerShapes) {
  MoeTuneLayer l{"deepseek-v3", 7168, 2048, 256, 8, 1};
  EXPECT_EQ(moe_fc1_shape(l), (GroupedGemmShape{4096, 7168, 256, 256, 8}));
  EXPECT_EQ(moe_fc2_shape(l), (GroupedGemmShape{7168, 2048, 256, 256, 8}));
  l.ep_size = 8;  // 32 local experts of 256
  EXPECT_EQ(moe_fc1_shape(l), (GroupedGemmShape{4096, 7168, 32, 256, 8}));
  EXPECT_EQ(moe_fc2_shape(l).groups, 32);
}

TEST_F(GroupedCacheTest, RoundTripNextToDenseEntries) {
  const GroupedGemmShape fc2{7168, 2048, 256, 256, 8};
  const GroupedGemmShape ep8{4096, 7168, 32, 256, 8};
  {
    auto c = open();
    c->insert(grouped(kFc1, 1, 9));
    c->insert(grouped(kFc1, 16, 1));
    c->insert(grouped(fc2, 16, 2));
    c->insert(grouped(ep8, 16, 10));
    c->insert(grouped(kFc1, 4096, 6, DType::kE2M1x2, DType::kBF16));
    c->insert(dense(4096, 7168, 16, 3));  // same n, k and bucket as a grouped entry
    ASSERT_TRUE(c->save().is_ok());
  }
  std::vector<std::string> w;
  auto c = open(&w);
  EXPECT_TRUE(w.empty()) << w[0];
  EXPECT_EQ(c->entries().size(), 6u);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 1)), 9);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 12)), 1);  // bucket 16
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(fc2, DType::kBF16, DType::kBF16, 16)), 2);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(ep8, DType::kBF16, DType::kBF16, 16)), 10);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(kFc1, DType::kE2M1x2, DType::kBF16, 4096)), 6);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 7168, 16), 3);
  // Every key field counts.
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 4096)), -1);  // W4A4 only
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(kFc1, DType::kFP16, DType::kFP16, 1)), -1);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key({4096, 7168, 256, 256, 4}, DType::kBF16, DType::kBF16, 16)), -1);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key({4096, 7168, 128, 256, 8}, DType::kBF16, DType::kBF16, 16)), -1);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key({4096, 7168, 256, 512, 8}, DType::kBF16, DType::kBF16, 16)), -1);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 7168, 1), -1);  // dense has no bucket-1 entry
  // The documented JSON: grouped entries carry groups, experts, top_k; dense entries do not.
  const auto j = nlohmann::json::parse(read());
  ASSERT_EQ(j["entries"].size(), 6u);
  int grouped_entries = 0;
  for (const auto& e : j["entries"]) {
    if (e["op"] == "grouped_gemm") {
      ++grouped_entries;
      for (const char* f : {"groups", "experts", "top_k", "m_bucket", "n", "k", "tactic", "tactic_name"})
        EXPECT_TRUE(e.contains(f)) << f;
    } else {
      EXPECT_EQ(e["op"], "gemm");
      EXPECT_FALSE(e.contains("groups"));
      EXPECT_FALSE(e.contains("experts"));
      EXPECT_FALSE(e.contains("top_k"));
    }
  }
  EXPECT_EQ(grouped_entries, 5);
}

TEST_F(GroupedCacheTest, FileWithoutGroupedFieldsStillLoads) {
  // A cache written before grouped entries existed: dense entries only, no groups/experts/top_k.
  write(file_of({entry_json("gemm", "", 3, gemm_tactics().at(3).name)}));
  std::vector<std::string> w;
  auto c = open(&w);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 7168, 16), 3);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 16)), -1);
  EXPECT_TRUE(w.empty()) << w[0];
  // Adding grouped entries keeps the old one as it was.
  c->insert(grouped(kFc1, 16, 2));
  ASSERT_TRUE(c->save().is_ok());
  auto c2 = open(&w);
  EXPECT_EQ(c2->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 7168, 16), 3);
  EXPECT_EQ(c2->lookup(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 16)), 2);
  EXPECT_TRUE(w.empty()) << w[0];
}

TEST_F(GroupedCacheTest, StaleGroupedTacticIsIgnoredAndDroppedOnSave) {
  const std::string g = R"("groups":256,"experts":256,"top_k":8,)";
  const std::string name1 = gemm_impl::grouped_gemm_tactic(1)->name;
  write(file_of({
      entry_json("grouped_gemm", g, 1, name1),  // valid
      // id 2 under tactic 1's name (the table was reordered): stale
      entry_json("grouped_gemm", R"("groups":256,"experts":256,"top_k":2,)", 2, name1),
      // an id the table no longer has: stale
      entry_json("grouped_gemm", R"("groups":256,"experts":256,"top_k":4,)", 999, "grouped_gone"),
  }));
  std::vector<std::string> w;
  auto c = open(&w);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 16)), 1);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key({4096, 7168, 256, 256, 2}, DType::kBF16, DType::kBF16, 16)), -1);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key({4096, 7168, 256, 256, 4}, DType::kBF16, DType::kBF16, 16)), -1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("stale"), std::string::npos) << w[0];
  c->insert(grouped(kFc1, 1, 8));
  ASSERT_TRUE(c->save().is_ok());
  std::vector<std::string> w2;
  auto c2 = open(&w2);
  EXPECT_TRUE(w2.empty()) << w2[0];
  EXPECT_EQ(c2->entries().size(), 2u);
}

TEST_F(GroupedCacheTest, MalformedGroupedEntriesAreIgnored) {
  const std::string name = gemm_impl::grouped_gemm_tactic(0)->name;
  write(file_of({
      entry_json("grouped_gemm", "", 0, name),                                        // no groups
      entry_json("grouped_gemm", R"("groups":256,"experts":128,"top_k":8,)", 0, name),  // groups > experts
      entry_json("grouped_gemm", R"("groups":8,"experts":8,"top_k":9,)", 0, name),      // top_k > experts
      entry_json("grouped_gemm", R"("groups":"256","experts":256,"top_k":8,)", 0, name),  // wrong type
      entry_json("gemm", R"("groups":8,"experts":8,"top_k":2,)", 3, gemm_tactics().at(3).name),  // dense with groups
      entry_json("grouped_gemm", R"("groups":256,"experts":256,"top_k":8,)", 0, name),  // fine
  }));
  std::vector<std::string> w;
  auto c = open(&w);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 16)), 0);
  EXPECT_EQ(c->entries().size(), 1u);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("5 malformed entries"), std::string::npos) << w[0];
}

TEST_F(GroupedCacheTest, EntriesOfUnknownOperationsAreKeptVerbatim) {
  // E.g. written by a newer fp4kit: never used here, never dropped or rewritten by this build's save.
  const std::string future =
      R"({"op":"attention","gpu":"NVIDIA H100 80GB HBM3","heads":64,"tactic":2,"tactic_name":"fa3"})";
  write(file_of({future, entry_json("gemm", "", 3, gemm_tactics().at(3).name)}));
  std::vector<std::string> w;
  auto c = open(&w);
  EXPECT_EQ(c->lookup("attention", DType::kBF16, DType::kBF16, 4096, 7168, 16), -1);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 7168, 16), 3);
  EXPECT_TRUE(w.empty()) << w[0];
  c->insert(grouped(kFc1, 16, 2));
  ASSERT_TRUE(c->save().is_ok());
  const auto j = nlohmann::json::parse(read());
  ASSERT_EQ(j["entries"].size(), 3u);
  bool kept = false;
  for (const auto& e : j["entries"]) kept = kept || e == nlohmann::json::parse(future);
  EXPECT_TRUE(kept) << j.dump();
}

TEST_F(GroupedCacheTest, GenerationChangesWithTheEntries) {
  auto c = open();
  const uint64_t g0 = c->generation();
  EXPECT_EQ(c->generation(), g0);
  c->insert(grouped(kFc1, 1, 9));
  const uint64_t g1 = c->generation();
  EXPECT_NE(g1, g0);
  ASSERT_TRUE(c->save().is_ok());
  const uint64_t g2 = c->generation();
  EXPECT_NE(g2, g1);
  c->reload();
  EXPECT_NE(c->generation(), g2);
  EXPECT_EQ(c->lookup(grouped_gemm_tune_key(kFc1, DType::kBF16, DType::kBF16, 1)), 9);
}

}  // namespace
}  // namespace fp4kit
