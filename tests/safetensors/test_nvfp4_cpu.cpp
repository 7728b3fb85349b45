// The checkpoint quantizer's CPU kernels (src/io/nvfp4_cpu.h) against the CPU reference:
// cpu_amax == reference::compute_global_scale's out_amax and cpu_quantize_modelopt ==
// reference::quantize_nvfp4 (kModelOpt, linear scales), bit for bit, on adversarial data in all
// three input dtypes, for several global scales, row lengths and thread counts, with both builds of
// the kernels (baseline SSE2 and AVX2, when the CPU has it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <utility>
#include <cstring>
#include <limits>
#include <vector>

#include "fp4kit/reference.h"
#include "io/nvfp4_cpu.h"
#include "safetensors/checkpoint_synth.h"

using namespace fp4kit;
using fp4kit::testing_synth::adversarial_values;
using fp4kit::testing_synth::encode_values;

namespace {

DType to_dtype(st::Dtype d) { return d == st::Dtype::kBF16 ? DType::kBF16 : d == st::Dtype::kF16 ? DType::kFP16 : DType::kFP32; }

// Raw bytes in a 4-byte-aligned buffer.
std::vector<uint32_t> aligned(const std::vector<uint8_t>& b) {
  std::vector<uint32_t> a((b.size() + 3) / 4);
  std::memcpy(a.data(), b.data(), b.size());
  return a;
}

float ref_amax(const void* x, DType dt, int64_t rows, int64_t cols) {
  GlobalScaleParams g;
  g.input = x;
  g.input_dtype = dt;
  g.rows = rows;
  g.cols = cols;
  g.numerics = QuantNumerics::kModelOpt;
  float gs = 0, amax = -1;
  g.out_global_scale = &gs;
  g.out_amax = &amax;
  EXPECT_TRUE(reference::compute_global_scale(g).is_ok());
  return amax;
}

// The kernel builds this CPU can run.
std::vector<io::CpuIsa> isas() {
  std::vector<io::CpuIsa> v = {io::CpuIsa::kBaseline};
  if (io::cpu_has_avx2()) v.push_back(io::CpuIsa::kAvx2);
  return v;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST(Nvfp4Cpu, ResolveThreads) {
  EXPECT_GE(io::resolve_threads(0), 1);
  EXPECT_EQ(io::resolve_threads(3), 3);
  // parallel_rows covers [0, n) exactly once with any thread count.
  for (int threads : {1, 2, 5}) {
    std::vector<int> hits(1000, 0);
    io::parallel_rows(1000, 7, threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) ++hits[size_t(i)];
    });
    for (int h : hits) ASSERT_EQ(h, 1);
  }
}

TEST(Nvfp4Cpu, AmaxEqualsReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (st::Dtype sd : {st::Dtype::kBF16, st::Dtype::kF16, st::Dtype::kF32}) {
    const DType dt = to_dtype(sd);
    const bool f16 = sd == st::Dtype::kF16;
    // Lengths: below one vector, with a tail, and over one 1M-element chunk (several chunks).
    for (int64_t count : {int64_t(5), int64_t(16 * 37 + 3), int64_t((1 << 20) + 4099)}) {
      for (bool extreme : {false, true}) {
        const auto v = adversarial_values(1, count, uint64_t(count), f16 ? -24 : -40, f16 ? 10 : 20, extreme);
        const auto buf = aligned(encode_values(v, sd));
        const float want = ref_amax(buf.data(), dt, 1, count);
        for (io::CpuIsa isa : isas()) {
          for (int threads : {1, 2, 3}) {
            const float got = io::cpu_amax(buf.data(), dt, count, threads, isa);
            EXPECT_EQ(bits(got), bits(want)) << dtype_name(dt) << " count " << count << " threads " << threads
                                             << " isa " << io::cpu_isa_name(isa) << ": " << got << " vs " << want;
          }
        }
      }
    }
    // All NaN, all -0: amax +0.
    for (float fill : {nan, -nan, -0.0f}) {
      const auto buf = aligned(encode_values(std::vector<float>(40, fill), sd));
      for (io::CpuIsa isa : isas())
        EXPECT_EQ(bits(io::cpu_amax(buf.data(), dt, 40, 2, isa)), 0u) << dtype_name(dt) << " fill " << fill;
      EXPECT_EQ(bits(ref_amax(buf.data(), dt, 1, 40)), 0u);
    }
  }
}

TEST(Nvfp4Cpu, QuantizeEqualsReference) {
  struct Shape {
    int64_t rows, cols;
  };
  // cols: one block; 17 and 65 blocks (around the 64-block groups and the 8-block amax steps);
  // 2048 rows of 64 (several 64K-element chunks, so threads split the rows).
  const Shape shapes[] = {{3, 16}, {37, 272}, {19, 1040}, {2048, 64}};
  std::vector<std::pair<int, io::CpuIsa>> runs;  // (threads, build)
  for (io::CpuIsa isa : isas()) {
    runs.push_back({1, isa});
    runs.push_back({3, isa});
  }
  if (!io::cpu_has_avx2()) std::printf("note: this CPU has no AVX2; only the baseline build was tested\n");
  long long compared = 0;
  for (st::Dtype sd : {st::Dtype::kBF16, st::Dtype::kF16, st::Dtype::kF32}) {
    const DType dt = to_dtype(sd);
    const bool f16 = sd == st::Dtype::kF16;
    for (const Shape& sh : shapes) {
      for (bool extreme : {false, true}) {
        const auto v = adversarial_values(sh.rows, sh.cols, uint64_t(sh.rows * 1000 + sh.cols), f16 ? -24 : -40,
                                          f16 ? 10 : 20, extreme);
        const auto buf = aligned(encode_values(v, sd));
        const float amax = ref_amax(buf.data(), dt, sh.rows, sh.cols);
        // ws2: the checkpoint's (amax/2688), one that saturates scales at 448, one that drives
        // small blocks' scales to E4M3 zero / subnormals, 1.0, and the degenerate 0, +Inf, NaN.
        const float ws2s[] = {amax / 2688.0f, amax / 2688.0f / 64.0f, amax / 2688.0f * 4096.0f, 1.0f, 0.0f,
                              std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
        for (float ws2 : ws2s) {
          std::vector<uint8_t> rc(size_t(sh.rows * sh.cols / 2)), rs(size_t(sh.rows * sh.cols / 16));
          Nvfp4QuantizeParams p;
          p.input = buf.data();
          p.input_dtype = dt;
          p.rows = sh.rows;
          p.cols = sh.cols;
          p.global_scale = &ws2;
          p.numerics = QuantNumerics::kModelOpt;
          p.out_codes = rc.data();
          p.out_codes_bytes = int64_t(rc.size());
          p.out_scales = rs.data();
          p.out_scales_bytes = int64_t(rs.size());
          p.scale_layout = ScaleLayout::kLinear;
          ASSERT_TRUE(reference::quantize_nvfp4(p).is_ok());
          for (const auto& [threads, isa] : runs) {
            std::vector<uint8_t> c(rc.size(), 0xEE), s(rs.size(), 0xEE);
            io::cpu_quantize_modelopt(buf.data(), dt, sh.rows, sh.cols, ws2, c.data(), s.data(), threads, isa);
            size_t bad_c = 0, bad_s = 0, first_c = SIZE_MAX;
            for (size_t i = 0; i < c.size(); ++i)
              if (c[i] != rc[i] && ++bad_c == 1) first_c = i;
            for (size_t i = 0; i < s.size(); ++i) bad_s += s[i] != rs[i];
            EXPECT_EQ(bad_c, 0u) << dtype_name(dt) << " " << sh.rows << "x" << sh.cols << " ws2 " << ws2
                                 << " threads " << threads << " isa " << io::cpu_isa_name(isa) << " extreme "
                                 << extreme << ": first code byte "
                                 << first_c;
            EXPECT_EQ(bad_s, 0u) << dtype_name(dt) << " " << sh.rows << "x" << sh.cols << " ws2 " << ws2
                                 << " threads " << threads << " isa " << io::cpu_isa_name(isa) << " extreme "
                                 << extreme;
            compared += int64_t(c.size() + s.size());
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 1000000);
}
