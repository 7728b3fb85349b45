// Golden tests of the bit-exact codecs in src/format/ against ml_dtypes / numpy, independent
// implementations of float8_e4m3fn, float4_e2m1fn, bfloat16 and IEEE float16.
//
// tests/format/golden_gen.py writes the inputs (every E2M1/E4M3/BF16/FP16 rounding boundary and
// its float32 neighbours, the saturation regions, specials, and >= 1,000,000 random floats) and
// the ml_dtypes results into a temp file; the interpreter is $FP4KIT_PYTHON (set by
// tests/CMakeLists.txt to the setup.sh venv). Without the interpreter or ml_dtypes the tests skip
// with the reason, unless FP4KIT_REQUIRE_GOLDEN=1, which turns the skip into a failure (CI).
//
// Where fp4kit's documented behaviour differs from ml_dtypes (docs/NUMERICS.md), the test asserts
// both sides' documented results for those inputs and counts them:
//   E4M3  |x| > 464 or ±Inf: fp4kit saturates to ±448 (PTX cvt.rn.satfinite); ml_dtypes gives NaN.
//   E4M3  NaN: fp4kit gives 0x7F for every NaN (as the PTX instruction does, measured on H100);
//         ml_dtypes keeps the sign (0x7F / 0xFF).
//   E2M1  NaN: fp4kit gives +0 (code 0) for every NaN; ml_dtypes gives a ±0 code (sign varies).
//   BF16/FP16 NaN: both give a NaN of the same sign; the payload is not compared (fp4kit returns a
//         quiet NaN, numpy float16 keeps signalling payloads).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "format/e2m1.h"
#include "format/e4m3.h"
#include "format/float16.h"

namespace {

namespace fs = std::filesystem;
using namespace fp4kit::format;

struct Golden {
  uint64_t n = 0, n_special = 0;
  std::vector<float> x;
  std::vector<uint8_t> e4m3, e2m1;
  std::vector<uint16_t> bf16, fp16;
  std::vector<float> dec_e4m3, dec_e2m1, dec_bf16, dec_fp16;
};

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

fs::path source_dir() {
  const std::string env = env_or_empty("FP4KIT_SOURCE_DIR");
  if (!env.empty()) return env;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

template <class T>
bool read_array(std::ifstream& in, std::vector<T>& v, uint64_t n) {
  v.resize(n);
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * sizeof(T)));
  return bool(in);
}

// Loads the golden data once per process. On failure returns nullopt and sets *skip (a reason to
// skip) or *error (a reason to fail).
std::optional<Golden> generate(std::string* skip, std::string* error) {
  std::string python = env_or_empty("FP4KIT_PYTHON");
  if (python.empty()) python = (source_dir() / ".deps/venv/bin/python").string();
  const fs::path script = source_dir() / "tests/format/golden_gen.py";
  if (!fs::exists(script)) {
    *error = "golden_gen.py not found at " + script.string();
    return std::nullopt;
  }
  if (::access(python.c_str(), X_OK) != 0) {
    *skip = "Python interpreter '" + python + "' not found (set FP4KIT_PYTHON or run scripts/setup.sh)";
    return std::nullopt;
  }
  const fs::path out = fs::temp_directory_path() / ("fp4kit_golden_" + std::to_string(::getpid()) + ".bin");
  const std::string cmd = "'" + python + "' '" + script.string() + "' '" + out.string() + "'";
  const int rc = std::system(cmd.c_str());
  const int status = (rc != -1 && WIFEXITED(rc)) ? WEXITSTATUS(rc) : -1;
  if (status == 3) {
    *skip = "numpy/ml_dtypes not importable by " + python + " (run scripts/setup.sh)";
    return std::nullopt;
  }
  if (status != 0) {
    *error = "'" + cmd + "' failed with status " + std::to_string(status);
    return std::nullopt;
  }
  Golden g;
  std::ifstream in(out, std::ios::binary);
  char magic[8];
  in.read(magic, 8);
  uint64_t hdr[2];
  in.read(reinterpret_cast<char*>(hdr), sizeof hdr);
  bool ok = bool(in) && std::memcmp(magic, "FP4KGLD1", 8) == 0;
  if (ok) {
    g.n = hdr[0];
    g.n_special = hdr[1];
    ok = read_array(in, g.x, g.n) && read_array(in, g.e4m3, g.n) && read_array(in, g.e2m1, g.n) &&
         read_array(in, g.bf16, g.n) && read_array(in, g.fp16, g.n) && read_array(in, g.dec_e4m3, 256) &&
         read_array(in, g.dec_e2m1, 16) && read_array(in, g.dec_bf16, 65536) && read_array(in, g.dec_fp16, 65536);
  }
  in.close();
  fs::remove(out);
  if (!ok) {
    *error = "cannot parse the golden file written by " + script.string();
    return std::nullopt;
  }
  return g;
}

const Golden* golden() {
  static std::string skip, error;
  static const std::optional<Golden> g = generate(&skip, &error);
  if (g) return &*g;
  if (!error.empty()) {
    ADD_FAILURE() << error;
  } else if (env_or_empty("FP4KIT_REQUIRE_GOLDEN") == "1") {
    ADD_FAILURE() << "FP4KIT_REQUIRE_GOLDEN=1 but: " << skip;
  } else {
    GTEST_LOG_(WARNING) << "skipping golden test: " << skip;
  }
  return nullptr;
}

#define GOLDEN_OR_SKIP(g)                                              \
  const Golden* g = golden();                                          \
  if (g == nullptr) {                                                  \
    if (HasFailure()) return;                                          \
    GTEST_SKIP() << "golden data unavailable (see the warning above)"; \
  }

bool signbit_of(float x) { return (float_bits(x) >> 31) != 0; }
std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

TEST(Golden, InputSetCoverage) {
  GOLDEN_OR_SKIP(g);
  EXPECT_GE(g->n - g->n_special, 1000000u) << "random inputs";
  EXPECT_GE(g->n_special, 100000u) << "boundary inputs";
  std::cout << "golden inputs: " << g->n_special << " boundary + " << (g->n - g->n_special) << " random\n";
}

TEST(Golden, E4M3EncodeMatchesMlDtypes) {
  GOLDEN_OR_SKIP(g);
  uint64_t same = 0, saturated = 0, nans = 0, bad = 0;
  for (uint64_t i = 0; i < g->n; ++i) {
    const float x = g->x[i];
    const uint8_t ours = float_to_e4m3(x), ml = g->e4m3[i];
    const uint8_t sign = signbit_of(x) ? 0x80 : 0x00;
    bool ok;
    if (std::isnan(x)) {
      // fp4kit: 0x7F for any NaN; ml_dtypes: NaN with the input's sign.
      ++nans;
      ok = ours == 0x7F && ml == (sign | 0x7F);
    } else if (std::fabs(x) > 464.0f) {
      // Documented difference: fp4kit saturates (satfinite), ml_dtypes overflows to NaN.
      ++saturated;
      ok = ours == (sign | 0x7E) && (ml & 0x7F) == 0x7F;
    } else {
      ++same;
      ok = ours == ml;
    }
    if (!ok && ++bad < 5) {
      ADD_FAILURE() << "x=" << x << " (" << hex(float_bits(x)) << ") fp4kit " << int(ours) << " ml_dtypes " << int(ml);
    }
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_GT(saturated, 1000u);
  EXPECT_GT(nans, 0u);
  std::cout << "e4m3: " << same << " bit-identical, " << saturated << " saturate (ml_dtypes NaN), " << nans
            << " NaN\n";
}

TEST(Golden, E2M1EncodeMatchesMlDtypes) {
  GOLDEN_OR_SKIP(g);
  uint64_t same = 0, nans = 0, neg_to_zero = 0, bad = 0;
  for (uint64_t i = 0; i < g->n; ++i) {
    const float x = g->x[i];
    const uint32_t ours = float_to_e2m1(x), ml = g->e2m1[i];
    if (std::isnan(x)) {
      // fp4kit: +0 for any NaN (E2M1 has no NaN); ml_dtypes: some ±0 code.
      ++nans;
      if (ours != 0u || (ml & 7u) != 0) ++bad;
      continue;
    }
    // Everything else, including ±Inf (-> ±6), overflow (saturates to ±6) and negative values that
    // round to zero (-> 0x8, the sign is kept on both sides), is bit-identical.
    if (signbit_of(x) && ours == 8u) ++neg_to_zero;
    ++same;
    if (ours != ml) {
      if (++bad < 5) ADD_FAILURE() << "x=" << x << " (" << hex(float_bits(x)) << ") fp4kit " << ours << " ml_dtypes " << ml;
    }
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_GT(nans, 0u);
  EXPECT_GT(neg_to_zero, 1000u);
  std::cout << "e2m1: " << same << " bit-identical (" << neg_to_zero << " negative -> -0), " << nans
            << " NaN -> +0\n";
}

TEST(Golden, BF16AndFP16EncodeMatch) {
  GOLDEN_OR_SKIP(g);
  uint64_t nans = 0, nan_payload_differs = 0, bad_bf16 = 0, bad_fp16 = 0;
  for (uint64_t i = 0; i < g->n; ++i) {
    const float x = g->x[i];
    const uint16_t b = float_to_bf16(x), h = float_to_fp16(x);
    if (std::isnan(x)) {
      ++nans;
      const uint16_t s = signbit_of(x) ? 0x8000 : 0;
      const bool bf16_ok = (b & 0x7FFF) > 0x7F80 && (g->bf16[i] & 0x7FFF) > 0x7F80 && (b & 0x8000) == s &&
                           (g->bf16[i] & 0x8000) == s;
      const bool fp16_ok = (h & 0x7FFF) > 0x7C00 && (g->fp16[i] & 0x7FFF) > 0x7C00 && (h & 0x8000) == s &&
                           (g->fp16[i] & 0x8000) == s;
      if (!bf16_ok) ++bad_bf16;
      if (!fp16_ok) ++bad_fp16;
      if (b != g->bf16[i] || h != g->fp16[i]) ++nan_payload_differs;
      continue;
    }
    if (b != g->bf16[i] && ++bad_bf16 < 5) {
      ADD_FAILURE() << "bf16 x=" << x << " (" << hex(float_bits(x)) << ") fp4kit " << b << " ml_dtypes " << g->bf16[i];
    }
    if (h != g->fp16[i] && ++bad_fp16 < 5) {
      ADD_FAILURE() << "fp16 x=" << x << " (" << hex(float_bits(x)) << ") fp4kit " << h << " numpy " << g->fp16[i];
    }
  }
  EXPECT_EQ(bad_bf16, 0u);
  EXPECT_EQ(bad_fp16, 0u);
  std::cout << "bf16/fp16: all non-NaN bit-identical; " << nans << " NaN inputs (" << nan_payload_differs
            << " with a different payload, same sign)\n";
}

// Decoders: every code of every format.
TEST(Golden, DecodersMatchEveryCode) {
  GOLDEN_OR_SKIP(g);
  auto same = [](float a, float b) { return float_bits(a) == float_bits(b) || (std::isnan(a) && std::isnan(b)); };
  for (int c = 0; c < 256; ++c) {
    EXPECT_TRUE(same(e4m3_to_float(uint8_t(c)), g->dec_e4m3[c])) << "e4m3 code " << c;
    // NaN codes keep their sign.
    if (std::isnan(g->dec_e4m3[c])) {
      EXPECT_EQ(signbit_of(e4m3_to_float(uint8_t(c))), c >= 128);
    }
  }
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(float_bits(e2m1_to_float(uint32_t(c))), float_bits(g->dec_e2m1[c])) << "e2m1 code " << c;
  }
  int nan_codes = 0;
  for (int c = 0; c < 65536; ++c) {
    // Exact bitwise for all codes, NaN payloads included (both are plain widenings).
    EXPECT_EQ(float_bits(bf16_to_float(uint16_t(c))), float_bits(g->dec_bf16[c])) << "bf16 code " << c;
    EXPECT_EQ(float_bits(fp16_to_float(uint16_t(c))), float_bits(g->dec_fp16[c])) << "fp16 code " << c;
    nan_codes += std::isnan(g->dec_fp16[c]);
  }
  EXPECT_EQ(nan_codes, 2 * 1023);
}

// Round trips (no Python needed): every non-NaN code survives decode -> encode.
TEST(Codecs, RoundTripEveryCode) {
  for (int c = 0; c < 256; ++c) {
    const float v = e4m3_to_float(uint8_t(c));
    if (!std::isnan(v)) {
      EXPECT_EQ(float_to_e4m3(v), c) << "e4m3 code " << c;
    }
  }
  for (uint32_t c = 0; c < 16; ++c) EXPECT_EQ(float_to_e2m1(e2m1_to_float(c)), c);
  for (int c = 0; c < 65536; ++c) {
    const float b = bf16_to_float(uint16_t(c)), h = fp16_to_float(uint16_t(c));
    if (!std::isnan(b)) {
      EXPECT_EQ(float_to_bf16(b), c);
    }
    if (!std::isnan(h)) {
      EXPECT_EQ(float_to_fp16(h), c);
    }
  }
}

}  // namespace
