// tools/cli_util: list syntax, synthetic data, error metrics, tables.
#include "cli_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace fp4kit::cli;

using V = std::vector<int64_t>;

TEST(ParseIntList, ValuesAndRanges) {
  EXPECT_EQ(parse_int_list("1,2,4"), (V{1, 2, 4}));
  EXPECT_EQ(parse_int_list(" 7 "), (V{7}));
  EXPECT_EQ(parse_int_list("128:512:+128"), (V{128, 256, 384, 512}));
  EXPECT_EQ(parse_int_list("1:4"), (V{1, 2, 3, 4}));
  EXPECT_EQ(parse_int_list("3:20:x2"), (V{3, 6, 12}));
  EXPECT_EQ(parse_int_list("4k,1K"), (V{4096, 1024}));
  EXPECT_EQ(parse_int_list("1,16:64:x2,4096"), (V{1, 16, 32, 64, 4096}));
  // Order is kept, duplicates dropped.
  EXPECT_EQ(parse_int_list("4,4,1:8:x2"), (V{4, 1, 2, 8}));

  const V pow2 = parse_int_list("1:32768:x2");
  ASSERT_EQ(pow2.size(), 16u);
  for (size_t i = 0; i < pow2.size(); ++i) EXPECT_EQ(pow2[i], int64_t(1) << i);
}

TEST(ParseIntList, NoOverflowNearInt64Max) {
  const V v = parse_int_list("1:9223372036854775807:x2");
  ASSERT_EQ(v.size(), 63u);
  EXPECT_EQ(v.back(), int64_t(1) << 62);
  EXPECT_EQ(parse_int_list("9223372036854775806:9223372036854775807:+5"), (V{9223372036854775806}));
}

TEST(ParseIntList, Errors) {
  for (const char* bad : {"", " ", "1,,2", "1,", "0", "-1", "a", "1.5", "8:4", "1:8:x1", "1:8:*2", "1:8:x",
                          "1:2:3:4", ":4", "99999999999999999999", "9007199254740993k", "1:100000000"}) {
    EXPECT_THROW(parse_int_list(bad), CliError) << "'" << bad << "'";
  }
  try {
    parse_int_list("16,abc");
    FAIL();
  } catch (const CliError& e) {
    EXPECT_NE(std::string(e.what()).find("abc"), std::string::npos) << e.what();
  }
}

TEST(ParseIntList, FormatRoundTrip) {
  const V v = parse_int_list("1:1024:x4,3");
  EXPECT_EQ(format_int_list(v), "1,4,16,64,256,1024,3");
  EXPECT_EQ(parse_int_list(format_int_list(v)), v);
  EXPECT_EQ(format_int_list({}), "");
}

TEST(Synthetic, DeterministicPerSeed) {
  EXPECT_EQ(synthetic_weight_bf16(64, 256, 1), synthetic_weight_bf16(64, 256, 1));
  EXPECT_EQ(synthetic_activation_bf16(8, 256, 7), synthetic_activation_bf16(8, 256, 7));
  EXPECT_NE(synthetic_weight_bf16(64, 256, 1), synthetic_weight_bf16(64, 256, 2));
  EXPECT_NE(synthetic_activation_bf16(8, 256, 1), synthetic_activation_bf16(8, 256, 2));
  // Weight and activation streams differ even for one seed and shape.
  EXPECT_NE(synthetic_weight_bf16(8, 256, 1), synthetic_activation_bf16(8, 256, 1));
}

TEST(Synthetic, RowsIndependentOfShapeAndThreads) {
  // Each row has its own generator: the first rows do not depend on how many rows there are (nor on
  // how rows are split among threads).
  const auto small = synthetic_weight_bf16(3, 512, 5);
  const auto big = synthetic_weight_bf16(3000, 512, 5);
  ASSERT_EQ(small.size(), 3u * 512);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), big.begin()));
}

TEST(Synthetic, LlamaLikeStatistics) {
  const int64_t n = 256, k = 2048;
  const auto w = bf16_to_float(synthetic_weight_bf16(n, k, 1));
  ASSERT_EQ(w.size(), size_t(n * k));
  double sum = 0, sq = 0;
  std::vector<double> col_sq(size_t(k), 0.0), row_sq(size_t(n), 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      const double v = w[size_t(r * k + c)];
      ASSERT_TRUE(std::isfinite(v));
      sum += v;
      sq += v * v;
      col_sq[size_t(c)] += v * v;
      row_sq[size_t(r)] += v * v;
    }
  EXPECT_LT(std::fabs(sum / double(n * k)), 1e-3);
  // Outlier input channels: k/512 = 4 columns with 8..12x the typical RMS.
  std::vector<double> sorted = col_sq;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  EXPECT_EQ(std::count_if(col_sq.begin(), col_sq.end(), [&](double s) { return s > 25 * median; }), 4);
  // Per-row variance varies (log-normal row scales).
  const auto [lo, hi] = std::minmax_element(row_sq.begin(), row_sq.end());
  EXPECT_GT(*hi / *lo, 4.0);
  EXPECT_GT(bf16_amax(synthetic_activation_bf16(16, 4096, 1)), 20.0f);
}

TEST(MatmulF64, SmallExact) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};  // [2, 3]
  const std::vector<float> b = {1, 0, 1, 0.5f, 0.25f, 2, 0, 0, 0, -1, -1, -1};  // [4, 3]
  const auto d = matmul_nt_f64(a.data(), b.data(), 2, 4, 3);
  EXPECT_EQ(d, (std::vector<double>{4, 7, 0, -6, 10, 15.25, 0, -15}));
}

TEST(Compare, Metrics) {
  const double ref[2] = {3, 4};
  const double same[2] = {3, 4};
  const float off[2] = {3.0f, 4.5f};
  ErrorStats s = compare(ref, same, 2);
  EXPECT_EQ(s.rel_fro, 0);
  EXPECT_TRUE(std::isinf(s.snr_db));
  s = compare(ref, off, 2);
  EXPECT_DOUBLE_EQ(s.rel_fro, 0.1);  // 0.5 / 5
  EXPECT_NEAR(s.snr_db, 20.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.max_abs, 0.5);
  const double nan_x[2] = {3, std::numeric_limits<double>::quiet_NaN()};
  s = compare(ref, nan_x, 2);
  EXPECT_TRUE(std::isnan(s.max_abs));
  EXPECT_TRUE(std::isnan(s.snr_db));
}

TEST(Report, Formatting) {
  EXPECT_EQ(format_fixed(18.734, 2), "18.73");
  EXPECT_EQ(format_fixed(std::numeric_limits<double>::infinity(), 2), "inf");
  EXPECT_EQ(format_sci(0.00123456), "1.23e-03");
  EXPECT_EQ(format_sci(0), "0");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(50.0 * 1024 * 1024), "50.0 MiB");
  EXPECT_EQ(format_bytes(80.0 * 1024 * 1024 * 1024), "80.0 GiB");
  EXPECT_EQ(format_shape(16, 4096), "16x4096");
  EXPECT_EQ(display_width("max |GPU−CPU|"), 13u);
}

TEST(Report, TableAlignment) {
  Table t({"mode", "rel err", "SNR dB"});
  t.add_row({"W4A16", "8.1e-02", "21.8"}).add_row({"W4A4", "1.2e-01"});
  EXPECT_EQ(t.render("  "),
            "  mode   rel err  SNR dB\n"
            "  W4A16  8.1e-02    21.8\n"
            "  W4A4   1.2e-01");
  EXPECT_EQ(t.render("", true),
            "mode   rel err  SNR dB\n"
            "----------------------\n"
            "W4A16  8.1e-02    21.8\n"
            "W4A4   1.2e-01");
  EXPECT_EQ(t.render("", false, false),
            "W4A16  8.1e-02  21.8\n"
            "W4A4   1.2e-01");
  EXPECT_THROW(t.add_row({"a", "b", "c", "d"}), CliError);

  Table u({"µs", "x"}, {Table::Align::kRight, Table::Align::kLeft});  // widths count code points
  u.add_row({"1", "é"});
  EXPECT_EQ(u.render(""), "µs  x\n 1  é");
}
