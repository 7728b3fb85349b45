// GPU dequantize, scale-layout conversion and global scale vs the CPU reference. Skips without an
// sm_90 GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "common/gpu_test.h"
#include "fp4kit/layout.h"
#include "fp4kit/quantize.h"
#include "fp4kit/reference.h"
#include "quant_test_util.h"

namespace fp4kit::quant_test {
namespace {

const DType kDtypes[] = {DType::kBF16, DType::kFP16, DType::kFP32};
const ScaleLayout kLayouts[] = {ScaleLayout::kSwizzled128x4, ScaleLayout::kSwizzled8x4, ScaleLayout::kLinear};

// Output values equal bit for bit, except that NaN matches any NaN.
std::string compare_values(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType t, int64_t rows,
                           int64_t cols, int64_t stride) {
  int64_t bad = 0;
  std::string msg;
  const size_t es = dtype_size(t);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r * stride + c);
      if (std::memcmp(got.data() + i * es, want.data() + i * es, es) == 0) continue;
      if (std::isnan(get(got, t, int64_t(i))) && std::isnan(get(want, t, int64_t(i)))) continue;
      if (bad < 6)
        msg += "(" + std::to_string(r) + "," + std::to_string(c) + ") got " + std::to_string(get(got, t, int64_t(i))) +
               " want " + std::to_string(get(want, t, int64_t(i))) + "; ";
      ++bad;
    }
  if (bad) msg += std::to_string(bad) + " values differ";
  return msg;
}

// Random element and scale bytes (every code, NaN scales included).
void random_bytes(std::vector<uint8_t>& v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (auto& b : v) b = uint8_t(rng());
}

TEST(DequantizeGpu, MatchesReference) {
  FP4KIT_REQUIRE_SM90A();
  const int64_t shapes[][2] = {{1, 32}, {7, 64}, {129, 1056}, {1000, 4096}};
  int i = 0;
  for (BlockFormat f : {BlockFormat::kNVFP4, BlockFormat::kMXFP4, BlockFormat::kMXFP8})
    for (auto& s : shapes)
      for (DType t : kDtypes) {
        const ScaleLayout l = kLayouts[i % 3];
        const int64_t rows = s[0], cols = s[1];
        const int64_t stride = (i % 2) ? cols + 8 : 0;
        const int64_t el_stride = (i % 4 == 1) ? cols + 32 : 0;  // input rows apart (0: cols)
        const int mode = i % 3;  // NVFP4: no dgs / per-tensor / per-row
        ++i;
        SCOPED_TRACE(std::string(block_format_name(f)) + " -> " + dtype_name(t) + " " + std::to_string(rows) + "x" +
                     std::to_string(cols) + " " + scale_layout_name(l) + " stride " + std::to_string(stride) +
                     " el_stride " + std::to_string(el_stride) + " mode " + std::to_string(mode));
        std::vector<uint8_t> el(size_t(element_buffer_bytes(f, rows, el_stride ? el_stride : cols)));
        std::vector<uint8_t> sc(size_t(scale_buffer_bytes(f, l, rows, cols)));
        random_bytes(el, uint64_t(i));
        random_bytes(sc, uint64_t(i) * 31 + 1);
        if (f == BlockFormat::kNVFP4)  // mostly finite scales, a few NaN (0x7F/0xFF)
          for (auto& b : sc) b = (b % 61 == 0) ? b : uint8_t(b & 0x77);
        else
          for (auto& b : sc) b = uint8_t(b % 61 == 0 ? b : 100 + b % 50);
        std::vector<float> dgs(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) dgs[size_t(r)] = 1.0f / (1.0f + 0.37f * float(r % 17));
        const int64_t st = stride ? stride : cols;
        const size_t out_bytes = size_t((rows - 1) * st + cols) * dtype_size(t);

        DevBuf d_el(el.size(), false), d_sc(sc.size(), false), d_dgs(dgs.size() * 4, false), d_out(out_bytes);
        d_el.upload(el.data(), el.size());
        d_sc.upload(sc.data(), sc.size());
        d_dgs.upload(dgs.data(), dgs.size() * 4);
        DequantizeParams p;
        p.format = f;
        p.elements = d_el.get();
        p.scales = d_sc.get();
        p.scale_layout = l;
        p.rows = rows;
        p.cols = cols;
        p.element_row_stride = el_stride;
        p.decode_global_scale = (f == BlockFormat::kNVFP4 && mode > 0) ? reinterpret_cast<float*>(d_dgs.get()) : nullptr;
        p.per_row_global_scale = f == BlockFormat::kNVFP4 && mode == 2;
        p.output = d_out.get();
        p.output_dtype = t;
        p.output_row_stride = stride;
        p.output_bytes = int64_t(out_bytes + kTail);
        const Status s = dequantize(p, nullptr);
        ASSERT_TRUE(s.is_ok()) << s.to_string();
        QT_CUDA(cudaDeviceSynchronize());
        std::vector<uint8_t> got = d_out.download_all();

        std::vector<uint8_t> want(out_bytes, kPoison);
        p.elements = el.data();
        p.scales = sc.data();
        p.decode_global_scale = p.decode_global_scale ? dgs.data() : nullptr;
        p.output = want.data();
        p.output_bytes = int64_t(out_bytes);
        const Status r = reference::dequantize(p);
        ASSERT_TRUE(r.is_ok()) << r.to_string();
        EXPECT_EQ(compare_values(got, want, t, rows, cols, st), "");
        // Row gaps (stride > cols) and the tail are never written.
        bool untouched = true;
        for (int64_t row = 0; row + 1 < rows && stride; ++row)
          for (int64_t c = cols; c < st; ++c)
            for (size_t b = 0; b < dtype_size(t); ++b) untouched &= got[size_t(row * st + c) * dtype_size(t) + b] == kPoison;
        for (size_t b = out_bytes; b < got.size(); ++b) untouched &= got[b] == kPoison;
        EXPECT_TRUE(untouched) << "bytes outside the output rows were written";
      }
}

// quantize -> dequantize on the GPU equals the same on the CPU.
TEST(DequantizeGpu, RoundTripMatchesReference) {
  FP4KIT_REQUIRE_SM90A();
  const int64_t rows = 257, cols = 2048;
  const std::vector<uint8_t> in = make_input(DType::kBF16, rows, cols, cols, Pattern::kRandom, 3);
  const std::vector<float> gs = encode_scales(in, DType::kBF16, rows, cols, cols, false);
  const float dgs = 1.0f / gs[0];
  DevBuf d_in(in.size(), false), d_gs(8, false), d_el(size_t(rows * cols / 2)), d_sc(size_t(scale_buffer_bytes(BlockFormat::kNVFP4, ScaleLayout::kSwizzled128x4, rows, cols))),
      d_out(size_t(rows * cols) * 2);
  d_in.upload(in.data(), in.size());
  const float g2[2] = {gs[0], dgs};
  d_gs.upload(g2, 8);
  Nvfp4QuantizeParams q;
  q.input = d_in.get();
  q.rows = rows;
  q.cols = cols;
  q.global_scale = reinterpret_cast<float*>(d_gs.get());
  q.out_codes = d_el.get();
  q.out_codes_bytes = int64_t(d_el.bytes());
  q.out_scales = d_sc.get();
  q.out_scales_bytes = int64_t(d_sc.bytes());
  ASSERT_TRUE(quantize_nvfp4(q, nullptr).is_ok());
  DequantizeParams p;
  p.elements = d_el.get();
  p.scales = d_sc.get();
  p.rows = rows;
  p.cols = cols;
  p.decode_global_scale = reinterpret_cast<float*>(d_gs.get()) + 1;
  p.output = d_out.get();
  p.output_bytes = int64_t(d_out.bytes());
  ASSERT_TRUE(dequantize(p, nullptr).is_ok());
  QT_CUDA(cudaDeviceSynchronize());
  std::vector<uint8_t> got = d_out.download_all();

  std::vector<uint8_t> el(d_el.bytes()), sc(d_sc.bytes()), want(d_out.bytes());
  q.input = in.data();
  q.global_scale = gs.data();
  q.out_codes = el.data();
  q.out_scales = sc.data();
  ASSERT_TRUE(reference::quantize_nvfp4(q).is_ok());
  p.elements = el.data();
  p.scales = sc.data();
  p.decode_global_scale = &dgs;
  p.output = want.data();
  ASSERT_TRUE(reference::dequantize(p).is_ok());
  EXPECT_EQ(compare_values(got, want, DType::kBF16, rows, cols, cols), "");
}

TEST(ScaleLayoutGpu, ConvertMatchesReference) {
  FP4KIT_REQUIRE_SM90A();
  const int64_t shapes[][2] = {{1, 1}, {7, 3}, {128, 4}, {129, 65}, {1000, 256}, {4099, 1025}};
  for (auto& s : shapes)
    for (ScaleLayout a : kLayouts)
      for (ScaleLayout b : kLayouts) {
        const int64_t rows = s[0], sf_cols = s[1];
        SCOPED_TRACE(std::string(scale_layout_name(a)) + " -> " + scale_layout_name(b) + " " + std::to_string(rows) +
                     "x" + std::to_string(sf_cols));
        const size_t in_bytes = size_t(scale_shape(a, rows, sf_cols).bytes());
        const size_t out_bytes = size_t(scale_shape(b, rows, sf_cols).bytes());
        std::vector<uint8_t> in(in_bytes);
        random_bytes(in, uint64_t(rows * 7 + sf_cols));  // input padding holds garbage: never read
        DevBuf d_in(in_bytes, false), d_out(out_bytes);
        d_in.upload(in.data(), in_bytes);
        ScaleLayoutConvertParams p;
        p.input = d_in.get();
        p.input_layout = a;
        p.output = d_out.get();
        p.output_layout = b;
        p.rows = rows;
        p.sf_cols = sf_cols;
        p.input_bytes = int64_t(in_bytes);
        p.output_bytes = int64_t(out_bytes + kTail);
        const Status st = convert_scale_layout(p, nullptr);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        QT_CUDA(cudaDeviceSynchronize());
        std::vector<uint8_t> got = d_out.download_all(), want(out_bytes);
        p.input = in.data();
        p.output = want.data();
        p.output_bytes = int64_t(out_bytes);
        ASSERT_TRUE(reference::convert_scale_layout(p).is_ok());
        EXPECT_EQ(compare_bytes(got, want, out_bytes, "scales"), "");
      }
}

TEST(GlobalScaleGpu, MatchesReference) {
  FP4KIT_REQUIRE_SM90A();
  const int64_t shapes[][3] = {{1, 16, 0}, {7, 40, 0}, {129, 1040, 1045}, {1000, 4096, 0}, {3, 300000, 0}, {5000, 64, 72}};
  int i = 0;
  for (auto& s : shapes)
    for (DType t : kDtypes)
      for (QuantNumerics n : {QuantNumerics::kExact, QuantNumerics::kModelOpt})
        for (bool per_row : {false, true})
          for (Pattern pat : {Pattern::kRandom, Pattern::kZero, Pattern::kHuge, Pattern::kNaN}) {
            const int64_t rows = s[0], cols = s[1], stride = s[2] ? s[2] : s[1];
            ++i;
            if (pat != Pattern::kRandom && (i % 3) != 0) continue;  // subsample the special patterns
            SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " " +
                         quant_numerics_name(n) + (per_row ? " per-row " : " per-tensor ") + pattern_name(pat));
            const std::vector<uint8_t> in = make_input(t, rows, cols, stride, pat, uint64_t(i));
            DevBuf d_in(in.size(), false), d_gs(size_t(rows) * 4), d_amax(size_t(rows) * 4);
            d_in.upload(in.data(), in.size());
            GlobalScaleParams p;
            p.input = d_in.get();
            p.input_dtype = t;
            p.rows = rows;
            p.cols = cols;
            p.input_row_stride = s[2];
            p.per_row = per_row;
            p.numerics = n;
            p.out_global_scale = reinterpret_cast<float*>(d_gs.get());
            p.out_amax = reinterpret_cast<float*>(d_amax.get());
            const size_t ws_bytes = global_scale_workspace_bytes(p);
            DevBuf ws(ws_bytes);
            const Status st = compute_global_scale(p, ws.get(), ws_bytes, nullptr);
            ASSERT_TRUE(st.is_ok()) << st.to_string();
            QT_CUDA(cudaDeviceSynchronize());
            const size_t nout = per_row ? size_t(rows) : 1;
            std::vector<uint8_t> got_gs = d_gs.download_all(), got_amax = d_amax.download_all();
            std::vector<float> want_gs(nout), want_amax(nout);
            p.input = in.data();
            p.out_global_scale = want_gs.data();
            p.out_amax = want_amax.data();
            ASSERT_TRUE(reference::compute_global_scale(p).is_ok());
            std::vector<uint8_t> wg(size_t(rows) * 4, kPoison), wa(size_t(rows) * 4, kPoison);
            std::memcpy(wg.data(), want_gs.data(), nout * 4);
            std::memcpy(wa.data(), want_amax.data(), nout * 4);
            EXPECT_EQ(compare_bytes(got_gs, wg, nout * 4, "gs"), "");
            EXPECT_EQ(compare_bytes(got_amax, wa, nout * 4, "amax"), "");
          }
}

TEST(GlobalScaleGpu, DeterministicAndStreamOrdered) {
  FP4KIT_REQUIRE_SM90A();
  const int64_t rows = 4096, cols = 8192;
  const std::vector<uint8_t> in = make_input(DType::kBF16, rows, cols, cols, Pattern::kRandom, 11);
  DevBuf d_in(in.size(), false), d_gs(8);
  d_in.upload(in.data(), in.size());
  GlobalScaleParams p;
  p.input = d_in.get();
  p.rows = rows;
  p.cols = cols;
  p.out_global_scale = reinterpret_cast<float*>(d_gs.get());
  DevBuf ws(global_scale_workspace_bytes(p));
  uint32_t first = 0;
  for (int rep = 0; rep < 3; ++rep) {
    ASSERT_TRUE(compute_global_scale(p, ws.get(), ws.bytes(), nullptr).is_ok());
    uint32_t v = 0;
    QT_CUDA(cudaMemcpy(&v, d_gs.get(), 4, cudaMemcpyDeviceToHost));
    if (rep == 0) first = v;
    EXPECT_EQ(v, first);
  }
}

}  // namespace
}  // namespace fp4kit::quant_test
