#include "cli_util.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>

#include "format/float16.h"
#include "reference/parallel.h"

namespace fp4kit::cli {

// ---- option values ------------------------------------------------------------------------------

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A positive integer with an optional k/K (x1024) suffix.
int64_t parse_positive(std::string_view s, std::string_view item) {
  s = trim(s);
  int64_t mult = 1;
  if (!s.empty() && (s.back() == 'k' || s.back() == 'K')) {
    mult = 1024;
    s.remove_suffix(1);
  }
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw CliError("bad list item '" + std::string(item) + "': '" + std::string(s) + "' is not an integer");
  if (v <= 0) throw CliError("bad list item '" + std::string(item) + "': values must be positive");
  if (v > std::numeric_limits<int64_t>::max() / mult)
    throw CliError("bad list item '" + std::string(item) + "': value too large");
  return v * mult;
}

}  // namespace

std::vector<int64_t> parse_int_list(std::string_view text) {
  constexpr size_t kMaxValues = 100000;
  std::vector<int64_t> out;
  std::unordered_set<int64_t> seen;
  auto push = [&](int64_t v) {
    if (seen.insert(v).second) out.push_back(v);
    if (out.size() > kMaxValues) throw CliError("list '" + std::string(text) + "' has too many values");
  };
  if (trim(text).empty()) throw CliError("empty list");
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = trim(text.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) throw CliError("empty item in list '" + std::string(text) + "'");
    std::vector<std::string_view> parts;
    for (size_t p = 0;;) {
      const size_t colon = item.find(':', p);
      parts.push_back(item.substr(p, colon == std::string_view::npos ? std::string_view::npos : colon - p));
      if (colon == std::string_view::npos) break;
      p = colon + 1;
    }
    if (parts.size() == 1) {
      push(parse_positive(parts[0], item));
      continue;
    }
    if (parts.size() > 3)
      throw CliError("bad list item '" + std::string(item) + "': expected START:STOP[:xF|:+S]");
    const int64_t start = parse_positive(parts[0], item);
    const int64_t stop = parse_positive(parts[1], item);
    if (stop < start)
      throw CliError("bad list item '" + std::string(item) + "': STOP is smaller than START");
    bool geometric = false;
    int64_t step = 1;
    if (parts.size() == 3) {
      std::string_view s = trim(parts[2]);
      if (s.empty() || (s.front() != 'x' && s.front() != '+'))
        throw CliError("bad list item '" + std::string(item) + "': step must be xF (multiply) or +S (add)");
      geometric = s.front() == 'x';
      s.remove_prefix(1);
      step = parse_positive(s, item);
      if (geometric && step < 2)
        throw CliError("bad list item '" + std::string(item) + "': factor must be at least 2");
    }
    for (int64_t v = start; v <= stop;) {
      push(v);
      if (geometric ? v > stop / step : v > stop - step) break;  // next value would pass STOP
      v = geometric ? v * step : v + step;
    }
  }
  return out;
}

std::string format_int_list(const std::vector<int64_t>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(values[i]);
  }
  return s;
}

// ---- synthetic data -------------------------------------------------------------------------------

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// xoshiro256** with Box-Muller normals.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream, uint64_t index) {
    uint64_t sm = seed ^ (stream * 0xd1b54a32d192ed03ull) ^ (index * 0x8cb92ba72f3d8dd7ull);
    for (auto& w : s_) w = splitmix64(sm);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  double uniform_open0() { return (double(next() >> 11) + 1.0) * 0x1.0p-53; }  // (0, 1]
  double normal() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform_open0()));
    const double t = 6.283185307179586 * uniform_open0();
    spare_ = r * std::sin(t);
    have_spare_ = true;
    return r * std::cos(t);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  double spare_ = 0;
  bool have_spare_ = false;
};

enum Stream : uint64_t { kWeightRows = 1, kWeightChannels, kActRows, kActChannels };

// Per-channel multipliers: 1, except `count` distinct channels in [lo, hi].
std::vector<float> channel_scales(int64_t k, int64_t count, double lo, double hi, uint64_t seed, uint64_t stream) {
  std::vector<float> chan(size_t(k), 1.0f);
  Rng rng(seed, stream, 0);
  count = std::min(count, k);
  for (int64_t placed = 0; placed < count;) {
    const int64_t c = int64_t(rng.next() % uint64_t(k));
    if (chan[size_t(c)] != 1.0f) continue;
    chan[size_t(c)] = float(lo + (hi - lo) * (rng.uniform_open0()));
    ++placed;
  }
  return chan;
}

std::vector<uint16_t> synthetic(int64_t rows, int64_t k, uint64_t seed, uint64_t row_stream, double base,
                                double row_sigma, const std::vector<float>& chan) {
  if (rows <= 0 || k <= 0) throw CliError("synthetic data needs positive shapes");
  std::vector<uint16_t> out(size_t(rows * k));
  reference::detail::parallel_for(rows, std::max<int64_t>(1, 65536 / k), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      Rng rng(seed, row_stream, uint64_t(r));
      const double row_scale = base * std::exp(row_sigma * rng.normal());
      uint16_t* dst = out.data() + r * k;
      for (int64_t c = 0; c < k; ++c)
        dst[c] = format::float_to_bf16(float(row_scale * chan[size_t(c)] * rng.normal()));
    }
  });
  return out;
}

}  // namespace

std::vector<uint16_t> synthetic_weight_bf16(int64_t n, int64_t k, uint64_t seed) {
  const auto chan = channel_scales(k, std::max<int64_t>(1, k / 512), 8.0, 12.0, seed, kWeightChannels);
  return synthetic(n, k, seed, kWeightRows, 0.02, 0.3, chan);
}

std::vector<uint16_t> synthetic_activation_bf16(int64_t m, int64_t k, uint64_t seed) {
  const auto chan = channel_scales(k, std::max<int64_t>(1, k / 1024), 20.0, 40.0, seed, kActChannels);
  return synthetic(m, k, seed, kActRows, 1.0, 0.5, chan);
}

std::vector<float> bf16_to_float(const std::vector<uint16_t>& bits) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = format::bf16_to_float(bits[i]);
  return out;
}

float bf16_amax(const std::vector<uint16_t>& bits) {
  float amax = 0;
  for (uint16_t b : bits) amax = std::max(amax, std::fabs(format::bf16_to_float(b)));
  return amax;
}

std::vector<double> matmul_nt_f64(const float* a, const float* b, int64_t m, int64_t n, int64_t k) {
  std::vector<double> d(size_t(m * n));
  // Parallel over columns of D (rows of B): each B row is read once per A row, from cache.
  reference::detail::parallel_for(n, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, m * k / 64)),
                                  [&](int64_t n0, int64_t n1) {
    for (int64_t j = n0; j < n1; ++j) {
      const float* bj = b + j * k;
      for (int64_t i = 0; i < m; ++i) {
        const float* ai = a + i * k;
        double acc[4] = {0, 0, 0, 0};
        int64_t t = 0;
        for (; t + 4 <= k; t += 4)
          for (int u = 0; u < 4; ++u) acc[u] += double(ai[t + u]) * double(bj[t + u]);
        for (; t < k; ++t) acc[0] += double(ai[t]) * double(bj[t]);
        d[size_t(i * n + j)] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
      }
    }
  });
  return d;
}

// ---- error metrics --------------------------------------------------------------------------------

namespace {
template <class R, class X>
ErrorStats compare_impl(const R* ref, const X* x, int64_t n) {
  ErrorStats s;
  s.count = n;
  double sig = 0, err = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double r = double(ref[i]);
    const double e = double(x[i]) - r;
    sig += r * r;
    err += e * e;
    s.max_abs = std::max(s.max_abs, std::fabs(e));
    if (std::isnan(e)) s.max_abs = e;
  }
  if (std::isnan(s.max_abs)) err = s.max_abs;
  s.rel_fro = sig > 0 ? std::sqrt(err / sig) : (err > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  s.snr_db = err > 0 ? 10.0 * std::log10(sig / err)
                     : (std::isnan(err) ? err : std::numeric_limits<double>::infinity());
  return s;
}
}  // namespace

ErrorStats compare(const double* ref, const double* x, int64_t n) { return compare_impl(ref, x, n); }
ErrorStats compare(const float* ref, const float* x, int64_t n) { return compare_impl(ref, x, n); }
ErrorStats compare(const double* ref, const float* x, int64_t n) { return compare_impl(ref, x, n); }

// ---- text report ----------------------------------------------------------------------------------

namespace {
std::string non_finite(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}
}  // namespace

std::string format_fixed(double v, int decimals) {
  if (!std::isfinite(v)) return non_finite(v);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_sci(double v, int digits) {
  if (!std::isfinite(v)) return non_finite(v);
  if (v == 0) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits, v);
  return buf;
}

std::string format_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? format_fixed(bytes, 0) + " B" : format_fixed(bytes, 1) + " " + kUnits[u];
}

size_t display_width(std::string_view s) {
  size_t w = 0;
  for (unsigned char ch : s) w += (ch & 0xC0u) != 0x80u;  // count UTF-8 code points, not bytes
  return w;
}

std::string format_shape(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

Table::Table(std::vector<std::string> headers, std::vector<Align> align)
    : headers_(std::move(headers)), align_(std::move(align)) {
  for (size_t i = align_.size(); i < headers_.size(); ++i) align_.push_back(i == 0 ? Align::kLeft : Align::kRight);
}

Table& Table::add_row(std::vector<std::string> cells) {
  if (cells.size() > headers_.size()) throw CliError("Table::add_row: more cells than columns");
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
  return *this;
}

std::string Table::render(const std::string& indent, bool rule, bool header) const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    width[c] = header ? display_width(headers_[c]) : 0;
    for (const auto& r : rows_) width[c] = std::max(width[c], display_width(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = indent;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - display_width(cells[c]), ' ');
      if (c) s += "  ";
      s += align_[c] == Align::kRight ? pad + cells[c] : cells[c] + pad;
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
  };
  std::string out;
  if (header) {
    out = line(headers_);
    if (rule) {
      size_t total = 0;
      for (size_t c = 0; c < width.size(); ++c) total += width[c] + (c ? 2 : 0);
      out += "\n" + indent + std::string(total, '-');
    }
  }
  bool first = !header;
  for (const auto& r : rows_) {
    if (!first) out += '\n';
    out += line(r);
    first = false;
  }
  return out;
}

}  // namespace fp4kit::cli
