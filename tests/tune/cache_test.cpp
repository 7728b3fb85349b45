// The tuning cache (CPU only): round trip, corrupt / foreign / stale files, concurrent processes
// and threads, default path.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fp4kit/device.h"
#include "fp4kit/gemm.h"
#include "fp4kit/tune.h"

namespace fp4kit {
namespace {

namespace fs = std::filesystem;

TuneDevice h100() { return TuneDevice{"NVIDIA H100 80GB HBM3", 132, 90, version()}; }
TuneDevice other_gpu() { return TuneDevice{"NVIDIA Unknown GPU", 78, 90, version()}; }

// Test tactics: id i is named "t<i>" for op "gemm".
bool test_validator(const std::string& op, int id, const std::string& name) {
  return op == "gemm" && name == "t" + std::to_string(id);
}

class TuneCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fp4kit_tune_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/sub/dir/tune.json";  // directories are created by save()
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<TuneCache> open(const TuneDevice& dev, std::vector<std::string>* warnings = nullptr) {
    return std::make_unique<TuneCache>(path_, dev, test_validator, [warnings](const std::string& w) {
      if (warnings) warnings->push_back(w);
    });
  }
  static TuneEntry entry(int64_t n, int64_t k, int64_t bucket, int tactic, double us = 1.5,
                         DType a = DType::kBF16, DType d = DType::kBF16) {
    TuneEntry e;
    e.key = TuneKey{"gemm", a, d, n, k, bucket};
    e.tactic = tactic;
    e.tactic_name = "t" + std::to_string(tactic);
    e.us = us;
    return e;
  }
  void write(const std::string& text) {
    fs::create_directories(fs::path(path_).parent_path());
    std::ofstream(path_, std::ios::binary) << text;
  }
  std::string read() {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_, path_;
};

TEST_F(TuneCacheTest, MissingFileIsAnEmptyCacheWithoutWarning) {
  std::vector<std::string> w;
  auto c = open(h100(), &w);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), -1);
  EXPECT_TRUE(c->entries().empty());
  EXPECT_TRUE(w.empty());
}

TEST_F(TuneCacheTest, RoundTrip) {
  {
    auto c = open(h100());
    c->insert(entry(4096, 4096, 1, 3, 12.5));
    c->insert(entry(4096, 4096, 16, 4, 13.0));
    c->insert(entry(6144, 4096, 512, 9, 40.25, DType::kFP16, DType::kFP16));
    c->insert(entry(4096, 4096, 1, 2, 11.0));  // replaces the first
    EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), 2);  // visible before save
    ASSERT_TRUE(c->save().is_ok());
  }
  std::vector<std::string> w;
  auto c = open(h100(), &w);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), 2);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 16), 4);
  EXPECT_EQ(c->lookup("gemm", DType::kFP16, DType::kFP16, 6144, 4096, 512), 9);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 6144, 4096, 512), -1);  // dtype is part of the key
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 2), -1);
  EXPECT_EQ(c->lookup("moe_gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), -1);
  EXPECT_EQ(c->entries().size(), 3u);
  EXPECT_TRUE(w.empty());
  for (const TuneEntry& e : c->entries()) {
    EXPECT_EQ(e.device, h100());
    if (e.key.n == 6144) {
      EXPECT_EQ(e.tactic_name, "t9");
      EXPECT_DOUBLE_EQ(e.us, 40.25);
    }
  }
  // The file is the documented JSON.
  const auto j = nlohmann::json::parse(read());
  EXPECT_EQ(j["format"], "fp4kit-tune-cache");
  EXPECT_EQ(j["format_version"], 1);
  ASSERT_EQ(j["entries"].size(), 3u);
  const auto& e0 = j["entries"][0];
  for (const char* f : {"gpu", "sm_count", "compute_capability", "fp4kit_version", "op", "a_dtype", "d_dtype", "n",
                        "k", "m_bucket", "tactic", "tactic_name", "us"})
    EXPECT_TRUE(e0.contains(f)) << f;
  // No temp files left behind.
  int files = 0;
  for (const auto& f : fs::directory_iterator(fs::path(path_).parent_path())) {
    const std::string name = f.path().filename().string();
    EXPECT_TRUE(name == "tune.json" || name == "tune.json.lock") << name;
    ++files;
  }
  EXPECT_LE(files, 2);
}

struct CorruptCase {
  const char* name;
  const char* text;
};

class TuneCacheCorruptTest : public TuneCacheTest, public ::testing::WithParamInterface<CorruptCase> {};

TEST_P(TuneCacheCorruptTest, IgnoredWithOneWarningAndRepairedBySave) {
  write(GetParam().text);
  std::vector<std::string> w;
  auto c = open(h100(), &w);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), -1);
  c->insert(entry(8192, 8192, 64, 5));
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 8192, 8192, 64), 5);
  ASSERT_EQ(w.size(), 1u) << GetParam().name;
  EXPECT_NE(w[0].find(path_), std::string::npos) << w[0];
  EXPECT_EQ(c->warnings(), 1);
  ASSERT_TRUE(c->save().is_ok());
  std::vector<std::string> w2;
  auto c2 = open(h100(), &w2);
  EXPECT_EQ(c2->lookup("gemm", DType::kBF16, DType::kBF16, 8192, 8192, 64), 5);
  EXPECT_TRUE(w2.empty()) << w2[0];
}

// An entry of an unknown operation is kept verbatim (dumped): nested 100000 levels deep it used to
// overflow the stack; now the whole file is refused as JSON.
const std::string kDeepEntry = R"({"format":"fp4kit-tune-cache","format_version":1,"entries":[{"op":"x","v":)" +
                               std::string(100000, '[') + std::string(100000, ']') + "}]}";

const CorruptCase kCorrupt[] = {
    {"deeply_nested", kDeepEntry.c_str()},
    {"garbage", "\x89PNG\r\n\x1a\n\x00\x01 not json at all"},
    {"empty", ""},
    {"truncated", R"({"format":"fp4kit-tune-cache","format_version":1,"entries":[{"gpu":"NVIDIA H100 80GB HBM3","sm_c)"},
    {"array", R"([1,2,3])"},
    {"other_format", R"({"format":"something-else","format_version":1,"entries":[]})"},
    {"format_version", R"({"format":"fp4kit-tune-cache","format_version":99,"entries":[]})"},
    {"entries_not_array", R"({"format":"fp4kit-tune-cache","format_version":1,"entries":{"a":1}})"},
    {"entry_wrong_types",
     R"({"format":"fp4kit-tune-cache","format_version":1,"entries":[{"gpu":"NVIDIA H100 80GB HBM3","sm_count":"132",
        "compute_capability":90,"fp4kit_version":"x","op":"gemm","a_dtype":"bf16","d_dtype":"bf16","n":4096,"k":4096,
        "m_bucket":1,"tactic":3,"tactic_name":"t3","us":1.0}]})"},
    {"entry_not_object", R"({"format":"fp4kit-tune-cache","format_version":1,"entries":[42, null, "x"]})"},
    {"entry_bad_dtype",
     R"({"format":"fp4kit-tune-cache","format_version":1,"entries":[{"gpu":"g","sm_count":1,"compute_capability":90,
        "fp4kit_version":"x","op":"gemm","a_dtype":"int3","d_dtype":"bf16","n":1,"k":16,"m_bucket":1,"tactic":0,
        "tactic_name":"t0","us":1}]})"},
    {"entry_negative_tactic",
     R"({"format":"fp4kit-tune-cache","format_version":1,"entries":[{"gpu":"g","sm_count":1,"compute_capability":90,
        "fp4kit_version":"x","op":"gemm","a_dtype":"bf16","d_dtype":"bf16","n":1,"k":16,"m_bucket":1,"tactic":-4,
        "tactic_name":"t0","us":1}]})"},
};

INSTANTIATE_TEST_SUITE_P(Files, TuneCacheCorruptTest, ::testing::ValuesIn(kCorrupt),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(TuneCacheTest, MalformedEntryDoesNotHideGoodOnes) {
  {
    auto c = open(h100());
    c->insert(entry(4096, 4096, 8, 1));
    ASSERT_TRUE(c->save().is_ok());
  }
  auto j = nlohmann::json::parse(read());
  j["entries"].push_back({{"gpu", 5}});
  write(j.dump());
  std::vector<std::string> w;
  auto c = open(h100(), &w);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 8), 1);
  EXPECT_EQ(w.size(), 1u);
}

TEST_F(TuneCacheTest, WrongVersionDoesNotMatch) {
  {
    TuneDevice old = h100();
    old.fp4kit_version = "0.0.1-old";
    auto c = open(old);
    c->insert(entry(4096, 4096, 1, 3));
    ASSERT_TRUE(c->save().is_ok());
  }
  std::vector<std::string> w;
  auto c = open(h100(), &w);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), -1);
  EXPECT_TRUE(c->entries().empty());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("foreign"), std::string::npos) << w[0];
}

TEST_F(TuneCacheTest, UnknownGpuMatchesNothingAndKeepsForeignEntries) {
  {
    auto c = open(h100());
    c->insert(entry(4096, 4096, 1, 3));
    c->insert(entry(4096, 4096, 2, 4));
    ASSERT_TRUE(c->save().is_ok());
  }
  for (TuneDevice dev : {other_gpu(), TuneDevice{"NVIDIA H100 80GB HBM3", 114, 90, version()},
                         TuneDevice{"NVIDIA H100 80GB HBM3", 132, 100, version()}}) {
    std::vector<std::string> w;
    auto c = open(dev, &w);
    EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), -1);
    EXPECT_EQ(w.size(), 1u);
  }
  {
    auto c = open(other_gpu());
    c->insert(entry(4096, 4096, 1, 7));
    ASSERT_TRUE(c->save().is_ok());
  }
  std::vector<std::string> w;
  auto h = open(h100(), &w);
  EXPECT_EQ(h->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), 3);
  EXPECT_EQ(h->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 2), 4);
  EXPECT_TRUE(w.empty());  // a file shared by two GPUs warns neither
  auto o = open(other_gpu());
  EXPECT_EQ(o->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), 7);
  EXPECT_EQ(nlohmann::json::parse(read())["entries"].size(), 3u);
}

TEST_F(TuneCacheTest, StaleTacticNameIsIgnoredAndDroppedOnSave) {
  {
    auto c = open(h100());
    c->insert(entry(4096, 4096, 1, 3));
    TuneEntry stale = entry(4096, 4096, 2, 4);
    stale.tactic_name = "renamed_tactic";
    c->insert(stale);
    TuneEntry gone = entry(4096, 4096, 4, 400);
    gone.tactic_name = "t999";
    c->insert(gone);
    ASSERT_TRUE(c->save().is_ok());
  }
  std::vector<std::string> w;
  auto c = open(h100(), &w);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), 3);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 2), -1);
  EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 4), -1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("stale"), std::string::npos) << w[0];
  c->insert(entry(4096, 4096, 8, 1));
  ASSERT_TRUE(c->save().is_ok());
  std::vector<std::string> w2;
  auto c2 = open(h100(), &w2);
  EXPECT_TRUE(w2.empty());
  EXPECT_EQ(c2->entries().size(), 2u);
}

TEST_F(TuneCacheTest, DefaultValidatorChecksTheGemmTacticTable) {
  const auto tactics = gemm_tactics();
  ASSERT_FALSE(tactics.empty());
  {
    TuneCache c(path_, h100(), {}, [](const std::string&) {});
    TuneEntry good = entry(4096, 4096, 1, tactics.back().id);
    good.tactic_name = tactics.back().name;
    c.insert(good);
    TuneEntry bad = entry(4096, 4096, 2, tactics.front().id);
    bad.tactic_name = tactics.front().name + "_old";
    c.insert(bad);
    ASSERT_TRUE(c.save().is_ok());
  }
  int warnings = 0;
  TuneCache c(path_, h100(), {}, [&](const std::string&) { ++warnings; });
  EXPECT_EQ(c.lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 1), tactics.back().id);
  EXPECT_EQ(c.lookup("gemm", DType::kBF16, DType::kBF16, 4096, 4096, 2), -1);
  EXPECT_EQ(warnings, 1);
}

TEST_F(TuneCacheTest, ConcurrentProcessesMergeTheirEntries) {
  constexpr int kWriters = 2, kIters = 40;
  fs::create_directories(fs::path(path_).parent_path());
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      for (int i = 0; i < kIters; ++i) {
        TuneCache c(path_, h100(), test_validator, [&](const std::string&) { rc = 3; });
        c.insert(entry(1000 * (w + 1) + i, 4096, 1 << (i % 8), i % 13, 1.0 + i));
        if (!c.save().is_ok()) rc = 2;
      }
      _exit(rc);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "writer failed (2: save error, 3: warning while loading)";
  }
  const auto j = nlohmann::json::parse(read());  // parses
  EXPECT_EQ(j["entries"].size(), size_t(kWriters * kIters));
  std::vector<std::string> warnings;
  auto c = open(h100(), &warnings);
  EXPECT_TRUE(warnings.empty());
  for (int w = 0; w < kWriters; ++w)
    for (int i = 0; i < kIters; ++i)
      EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 1000 * (w + 1) + i, 4096, 1 << (i % 8)), i % 13);
}

TEST_F(TuneCacheTest, ConcurrentThreads) {
  constexpr int kThreads = 4, kIters = 25;
  auto shared = open(h100());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        // Half the threads share one cache object, the others open their own.
        if (t % 2 == 0) {
          shared->insert(entry(100 * (t + 1) + i, 2048, 4, i % 5));
          if (shared->lookup("gemm", DType::kBF16, DType::kBF16, 100 * (t + 1) + i, 2048, 4) != i % 5) ++failures;
          if (i % 5 == 4 && !shared->save().is_ok()) ++failures;
        } else {
          TuneCache own(path_, h100(), test_validator, [&](const std::string&) { ++failures; });
          own.insert(entry(100 * (t + 1) + i, 2048, 4, i % 5));
          if (!own.save().is_ok()) ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(shared->save().is_ok());
  EXPECT_EQ(failures.load(), 0);
  auto c = open(h100());
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kIters; ++i)
      EXPECT_EQ(c->lookup("gemm", DType::kBF16, DType::kBF16, 100 * (t + 1) + i, 2048, 4), i % 5) << t << " " << i;
  EXPECT_EQ(nlohmann::json::parse(read())["entries"].size(), size_t(kThreads * kIters));
}

TEST_F(TuneCacheTest, UnwritableDirectoryIsAnErrorNotACrash) {
  TuneCache c("/proc/fp4kit-no-such-dir/tune.json", h100(), test_validator, [](const std::string&) {});
  EXPECT_EQ(c.lookup("gemm", DType::kBF16, DType::kBF16, 1, 16, 1), -1);
  c.insert(entry(1, 16, 1, 0));
  EXPECT_FALSE(c.save().is_ok());
  EXPECT_EQ(c.lookup("gemm", DType::kBF16, DType::kBF16, 1, 16, 1), 0);  // still usable in memory
}

class EnvGuard {
 public:
  explicit EnvGuard(const char* name) : name_(name) {
    const char* v = std::getenv(name);
    had_ = v != nullptr;
    if (had_) value_ = v;
  }
  ~EnvGuard() {
    if (had_)
      setenv(name_.c_str(), value_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

 private:
  std::string name_, value_;
  bool had_ = false;
};

TEST(TuneCachePath, FromEnvironment) {
  EnvGuard a("FP4KIT_TUNE_CACHE"), b("XDG_CACHE_HOME"), c("HOME");
  setenv("FP4KIT_TUNE_CACHE", "/x/y.json", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(tune_cache_default_path(), "/x/y.json");
  setenv("FP4KIT_TUNE_CACHE", "off", 1);
  EXPECT_EQ(tune_cache_default_path(), "");
  unsetenv("FP4KIT_TUNE_CACHE");
  EXPECT_EQ(tune_cache_default_path(), "/xdg/fp4kit/tune.json");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(tune_cache_default_path(), "/home/u/.cache/fp4kit/tune.json");
  unsetenv("HOME");
  EXPECT_EQ(tune_cache_default_path(), "");
}

TEST(TuneCacheDefault, LookupWithoutGpuIsAMiss) {
  GemmParams p;
  p.m = 7;
  p.n = 4096;
  p.k = 4096;
  if (!device_info().available) {
    EXPECT_EQ(default_tune_cache(), nullptr);
    EXPECT_EQ(tuned_gemm_tactic(p), -1);
  }
  EXPECT_EQ(current_tune_device().fp4kit_version, version());
}

}  // namespace
}  // namespace fp4kit
