// The fp4kit executable end to end: exit codes, one-line errors, the CPU demo on a small shape.
// Skipped when the CLI was not built (FP4KIT_CLI_PATH comes from tools/CMakeLists.txt).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "fp4kit/device.h"

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

#ifdef FP4KIT_CLI_PATH
const char* cli_path() { return FP4KIT_CLI_PATH; }
#else
const char* cli_path() { return ""; }
#endif

Result run_cli(const std::string& args) {
  const std::string dir = ::testing::TempDir();
  // Per-process names: ctest runs the tests of this file as parallel processes.
  const std::string base = dir + "fp4kit_cli_test." + std::to_string(::getpid());
  const std::string out = base + ".out", err = base + ".err";
  const std::string cmd = std::string("'") + cli_path() + "' " + args + " >'" + out + "' 2>'" + err + "' </dev/null";
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

bool one_error_line(const std::string& err) {
  return err.rfind("fp4kit: error: ", 0) == 0 && err.find('\n') == err.size() - 1;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!*cli_path() || !std::ifstream(cli_path()).good()) GTEST_SKIP() << "fp4kit CLI not built";
  }
};

TEST_F(Cli, InfoAndVersion) {
  Result r = run_cli("info");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("CPU reference"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU kernels"), std::string::npos) << r.out;
  r = run_cli("info --json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\"gpu_kernels\""), std::string::npos) << r.out;
  // The build's source revision (cmake/source_revision.cmake), as the library reports it.
  EXPECT_NE(r.out.find(std::string("\"source_revision\": \"") + fp4kit::source_revision() + "\""), std::string::npos) << r.out;
  EXPECT_GT(std::strlen(fp4kit::source_revision()), 0u);
  r = run_cli("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("fp4kit ", 0), 0u) << r.out;
  r = run_cli("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("demo"), std::string::npos);
}

TEST_F(Cli, UsageErrorsAreOneLine) {
  for (const char* args : {"", "nonsense", "info --bogus", "demo --m", "demo --m abc", "bench", "demo --m 4 extra"}) {
    const Result r = run_cli(args);
    EXPECT_EQ(r.code, 2) << "fp4kit " << args;
    EXPECT_TRUE(one_error_line(r.err)) << "fp4kit " << args << " -> " << r.err;
  }
}

TEST_F(Cli, ApiErrorsAreOneLine) {
  for (const char* args : {"demo --cpu --k 40", "demo --cpu --m 0", "demo --cpu --iters 0"}) {
    const Result r = run_cli(args);
    EXPECT_EQ(r.code, 1) << "fp4kit " << args;
    EXPECT_TRUE(one_error_line(r.err)) << "fp4kit " << args << " -> " << r.err;
  }
}

TEST_F(Cli, CpuDemoSmall) {
  Result r = run_cli("demo --cpu --m 4 --n 256 --k 512");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"CPU reference (--cpu)", "weight W", "activation A", "W4A16", "W4A4", "SNR dB"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  r = run_cli("demo --cpu --m 4 --n 256 --k 512 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"vs_decoded_exact\""), std::string::npos) << r.out;
}

TEST_F(Cli, BenchForwardsOrSaysNotBuilt) {
  for (const char* which : {"quantize", "gemm", "moe"}) {
    const Result r = run_cli(std::string("bench ") + which + " --help");
    if (r.code == 2) {
      EXPECT_NE(r.err.find("not built"), std::string::npos) << r.err;
      EXPECT_TRUE(one_error_line(r.err)) << r.err;
    } else {
      EXPECT_EQ(r.code, 0) << r.err;
      EXPECT_FALSE(r.out.empty());
      // Both GEMM and MoE benches time back-to-back calls with programmatic dependent launch.
      if (std::string(which) != "quantize") EXPECT_NE(r.out.find("--pdl"), std::string::npos) << which;
      // ... and can warm up for a time, so that long calls are timed at their own settled clock.
      if (std::string(which) != "quantize") EXPECT_NE(r.out.find("--warmup-ms"), std::string::npos) << which;
    }
    const Result bad = run_cli(std::string("bench ") + which + " --no-such-option");
    EXPECT_EQ(bad.code, 2) << bad.err;
    EXPECT_TRUE(one_error_line(bad.err)) << bad.err;
    if (r.code == 0 && std::string(which) != "quantize") {
      for (const char* v : {"-1", "abc", "nan", "inf"}) {
        const Result neg = run_cli(std::string("bench ") + which + " --warmup-ms " + v);
        EXPECT_EQ(neg.code, 2) << v << "\n" << neg.err;
        EXPECT_NE(neg.err.find("--warmup-ms"), std::string::npos) << neg.err;
        EXPECT_TRUE(one_error_line(neg.err)) << neg.err;
      }
      // 0 (the default) parses: whatever follows (no GPU here, or a run), it is not an argument error.
      const Result zero = run_cli(std::string("bench ") + which + " --warmup-ms 0 --help");
      EXPECT_EQ(zero.code, 0) << zero.err;
    }
  }
}

// `tune --moe` checks its inputs before looking for a GPU: one error line, exit 1, on any machine.
TEST_F(Cli, TuneMoeUsageErrors) {
  for (const char* args : {"tune --moe no-such-layer", "tune --moe 2048x256x8x500", "tune --moe mixtral-8x7b --ep 3",
                           "tune --moe fi-32 --model llama3.1-8b", "tune --m 1 --shapes 4096x4096 --t 16",
                           "tune --moe fi-32 --t 0", "tune --moe fi-32 --mode w8a8"}) {
    const Result r = run_cli(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.err;
    EXPECT_TRUE(one_error_line(r.err)) << args << "\n" << r.err;
  }
  const Result r = run_cli("tune --moe no-such-layer");
  EXPECT_NE(r.err.find("qwen3.6-35b-a3b"), std::string::npos) << r.err;  // lists bench moe's presets
}

}  // namespace
