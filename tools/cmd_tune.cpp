// fp4kit tune: profile every GEMM tactic for a list of shapes (or a model preset) and M buckets, or
// every grouped GEMM tactic of MoE layers (--moe, the `bench moe` presets) at token counts T, and
// write the winners to the tuning cache that gemm() / fused_moe() consult for tactic = -1
// (docs/TUNING.md).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "fp4kit/device.h"
#include "fp4kit/tune.h"

#if defined(FP4KIT_HAVE_BENCH) && __has_include("bench/bench_moe.h")
#include "bench/bench_moe.h"  // the MoE presets and default T list, shared with `bench moe`
#define FP4KIT_CLI_HAVE_MOE_PRESETS 1
#endif

namespace fp4kit::cli {
namespace {

struct TuneArgs {
  std::string model;
  std::string shapes;
  std::string m = "1:16384:x2";
  std::string dtype = "bf16";
  std::string mode = "w4a16";
  std::string cache;
  bool exhaustive_report = false;
  int repeats = 15;
  std::string moe;  // --moe PRESET[,PRESET]: tune fused_moe's grouped GEMMs instead
  std::string t;    // --t: token counts of --moe (default: bench moe's)
  int64_t ep = 1;   // --ep: expert-parallel size of --moe (rank 0 is tuned)
};

struct Preset {
  const char* name;
  std::vector<std::pair<const char*, GemmShape>> layers;
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = {
      {"llama3.1-8b", {{"qkv", {6144, 4096}}, {"o", {4096, 4096}}, {"gate_up", {28672, 4096}}, {"down", {4096, 14336}}}},
      {"llama3.1-70b",
       {{"qkv", {10240, 8192}}, {"o", {8192, 8192}}, {"gate_up", {57344, 8192}}, {"down", {8192, 28672}}}},
  };
  return p;
}

int64_t parse_positive(const std::string& s, const std::string& item) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw CliError("--shapes: '" + item + "' is not NxK (positive integers)");
  const int64_t v = std::stoll(s);
  if (v <= 0) throw CliError("--shapes: '" + item + "' has a zero dimension");
  return v;
}

std::vector<GemmShape> parse_shapes(const std::string& text) {
  std::vector<GemmShape> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t x = item.find_first_of("xX");
    if (x == std::string::npos) throw CliError("--shapes: '" + item + "' is not NxK (e.g. 4096x4096)");
    GemmShape s{parse_positive(item.substr(0, x), item), parse_positive(item.substr(x + 1), item)};
    if (s.k % 16 != 0) throw CliError("--shapes: '" + item + "': K must be a multiple of 16");
    out.push_back(s);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string us_text(double us) {
  if (us < 0) return "failed";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", us);
  return buf;
}

// --moe: the layers, from the presets `fp4kit bench moe` uses.
std::vector<MoeTuneLayer> moe_layers(const TuneArgs& a) {
#ifdef FP4KIT_CLI_HAVE_MOE_PRESETS
  std::vector<bench::MoeBenchPreset> presets;
  std::string error;
  if (!bench::parse_moe_bench_presets(a.moe, &presets, &error, "--moe")) throw CliError(error);
  if (a.ep < 1) throw CliError("--ep: must be >= 1");
  std::vector<MoeTuneLayer> layers;
  for (const bench::MoeBenchPreset& p : presets) {
    if (p.experts % a.ep != 0)
      throw CliError("--ep: " + p.name + " has " + std::to_string(p.experts) + " experts, not a multiple of " +
                     std::to_string(a.ep));
    layers.push_back(MoeTuneLayer{p.name, p.hidden, p.inter, p.experts, p.top_k, a.ep});
  }
  return layers;
#else
  (void)a;
  throw CliError("--moe: this build has no MoE presets (bench/ was not built)");
#endif
}

std::vector<int64_t> moe_tokens(const TuneArgs& a) {
  if (!a.t.empty()) return parse_int_list(a.t);
#ifdef FP4KIT_CLI_HAVE_MOE_PRESETS
  return bench::default_moe_bench_t();
#else
  return {1, 16, 4096};
#endif
}

int run_tune(const TuneArgs& a) {
  // Inputs first, so that usage errors are reported on any machine.
  const bool moe = !a.moe.empty();
  if (moe && (!a.model.empty() || !a.shapes.empty()))
    throw CliError("--moe tunes MoE layers; give it without --model / --shapes (one run each)");
  if (!moe && !a.t.empty()) throw CliError("--t is the token list of --moe (dense GEMMs take --m)");
  if (!moe && a.ep != 1) throw CliError("--ep applies to --moe only");
  std::vector<MoeTuneLayer> layers;
  std::vector<int64_t> tokens;
  if (moe) {
    layers = moe_layers(a);
    tokens = moe_tokens(a);
  }
  std::vector<GemmShape> shapes;
  if (!a.model.empty()) {
    const Preset* p = nullptr;
    for (const Preset& x : presets())
      if (x.name == a.model) p = &x;
    if (!p) throw CliError("--model: unknown model '" + a.model + "' (llama3.1-8b, llama3.1-70b)");
    for (const auto& l : p->layers) shapes.push_back(l.second);
  }
  if (!a.shapes.empty())
    for (const GemmShape& s : parse_shapes(a.shapes)) shapes.push_back(s);
  if (shapes.empty() && !moe) throw CliError("give --model, --shapes or --moe (see fp4kit tune --help)");
  const std::vector<int64_t> ms = moe ? tokens : a.m == "buckets" ? tune_m_buckets(16384) : parse_int_list(a.m);
  if (a.dtype != "bf16" && a.dtype != "fp16") throw CliError("--dtype: expected bf16 or fp16");
  if (a.mode != "w4a16" && a.mode != "w4a4") throw CliError("--mode: expected w4a16 or w4a4");
  const DType dt = a.dtype == "fp16" ? DType::kFP16 : DType::kBF16;
  TuneOptions opt;
  opt.a_dtype = a.mode == "w4a4" ? DType::kE2M1x2 : dt;
  opt.d_dtype = dt;
  opt.profile.repeats = std::max(3, a.repeats);
  const std::string path = a.cache.empty() ? tune_cache_default_path() : a.cache;

  const DeviceInfo& dev = device_info();
  if (!dev.available) {
    std::fprintf(stderr, "fp4kit: error: tune: no usable CUDA GPU (%s); tuning measures the kernels on the GPU\n",
                 dev.reason.empty() ? "no CUDA device" : dev.reason.c_str());
    return 1;
  }
  if (dev.compute_capability != 90) {
    std::fprintf(stderr, "fp4kit: error: tune: the GEMM kernels need an sm_90 GPU; %s is sm_%d\n", dev.name.c_str(),
                 dev.compute_capability);
    return 1;
  }
  if (path.empty())
    throw CliError("no cache path: give --cache, or set FP4KIT_TUNE_CACHE, XDG_CACHE_HOME or HOME");

  std::vector<int64_t> buckets;
  for (int64_t m : ms) buckets.push_back(tune_m_bucket(m));
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  std::printf("fp4kit tune: %s (%d SMs, sm_%d), fp4kit %s\n", dev.name.c_str(), dev.sm_count, dev.compute_capability,
              version());
  if (moe)
    std::printf("  mode %s, dtype %s, %zu MoE layer(s) x FC1, FC2 x %zu T bucket(s) [%s], ep %lld, cache %s\n",
                a.mode.c_str(), a.dtype.c_str(), layers.size(), buckets.size(), format_int_list(buckets).c_str(),
                (long long)a.ep, path.c_str());
  else
    std::printf("  mode %s, dtype %s, %zu shape(s) x %zu M bucket(s) [%s], cache %s\n", a.mode.c_str(),
                a.dtype.c_str(), shapes.size(), buckets.size(), format_int_list(buckets).c_str(), path.c_str());
  std::fflush(stdout);

  TuneCache cache(path, current_tune_device());
  double worst_gap = 0;
  std::string worst_point;
  int points = 0, heuristic_best = 0;
  // Dense: "6144x4096   m<=16"; MoE: "deepseek-v3 fc1 4096x7168 T<=16".
  const char* bucket_name = moe ? "T<=" : "m<=";
  auto progress = [&](const TuneResult& r, int index, int total) {
    const std::string shape =
        r.label.empty() ? format_shape(r.key.n, r.key.k) : r.label + " " + format_shape(r.key.n, r.key.k);
    const int width = moe ? 30 : 11;
    if (r.best_tactic < 0) {
      std::printf("[%3d/%d] %-*s %s%-6lld no tactic ran\n", index + 1, total, width, shape.c_str(), bucket_name,
                  (long long)r.key.m_bucket);
    } else {
      const double gap = r.heuristic_us > 0 ? 100.0 * (r.heuristic_us / r.best_us - 1.0) : -1;
      std::string heur = r.heuristic_tactic == r.best_tactic ? std::string("heuristic agrees")
                                                             : "heuristic " + us_text(r.heuristic_us);
      if (r.heuristic_tactic != r.best_tactic && gap >= 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " (+%.1f%%)", gap);
        heur += buf;
      }
      std::printf("[%3d/%d] %-*s %s%-6lld %-28s %10s   %s\n", index + 1, total, width, shape.c_str(), bucket_name,
                  (long long)r.key.m_bucket, r.best_name.c_str(), us_text(r.best_us).c_str(), heur.c_str());
      ++points;
      if (r.heuristic_tactic == r.best_tactic) ++heuristic_best;
      const double g = r.heuristic_us > 0 ? r.heuristic_us / r.best_us - 1.0 : 1e9;
      if (g > worst_gap) {
        worst_gap = g;
        worst_point = shape + " " + bucket_name + std::to_string(r.key.m_bucket);
      }
    }
    if (a.exhaustive_report) {
      std::vector<const TacticTiming*> t;
      for (const TacticTiming& x : r.timings) t.push_back(&x);
      std::stable_sort(t.begin(), t.end(), [](const TacticTiming* x, const TacticTiming* y) {
        return (x->us >= 0) != (y->us >= 0) ? x->us >= 0 : x->us < y->us;
      });
      Table table({"tactic", "id", "us", "vs best"});
      for (const TacticTiming* x : t) {
        if (x->us >= 0) {
          table.add_row({x->name, std::to_string(x->tactic), format_fixed(x->us, 2),
                         "+" + format_fixed(100.0 * (x->us / r.best_us - 1.0), 1) + "%"});
        } else {
          table.add_row({x->name, std::to_string(x->tactic), "skipped", x->status.message()});
        }
      }
      std::printf("%s\n", table.render("          ").c_str());
    }
    std::fflush(stdout);
  };
  std::vector<TuneResult> results;
  const Status s = moe ? tune_moe(layers, tokens, opt, &cache, &results, progress)
                       : tune_gemm(shapes, ms, opt, &cache, &results, progress);
  if (!s.is_ok()) throw CliError(s.to_string());
  std::printf("tuned %d point(s); the heuristic picked the winner at %d", points, heuristic_best);
  if (points > heuristic_best && worst_gap < 1e8)
    std::printf("; worst heuristic point %s (+%.1f%%)", worst_point.c_str(), 100.0 * worst_gap);
  std::printf("\nwrote %s\n", path.c_str());
  return 0;
}

}  // namespace

Command add_tune_command(CLI::App& app) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* sub = app.add_subcommand(
      "tune", "Profile the GEMM tactics per shape and M bucket (or the MoE grouped GEMM tactics per layer and T "
              "bucket); write the tuning cache");
  sub->add_option("--model", args->model, "Model preset: llama3.1-8b or llama3.1-70b (its linear layers)");
  sub->add_option("--shapes", args->shapes, "Weight shapes NxK, comma-separated (e.g. 6144x4096,4096x14336)");
  sub->add_option("--m", args->m, "Token counts M (list, START:STOP:xF / :+S, or 'buckets' = every M bucket up to 16384); each "
                  "is tuned at its bucket")
      ->capture_default_str();
  sub->add_option("--dtype", args->dtype, "Activation/output dtype: bf16 or fp16")->capture_default_str();
  sub->add_option("--mode", args->mode, "w4a16 (16-bit activations) or w4a4 (NVFP4 activations)")
      ->capture_default_str();
  sub->add_option("--cache", args->cache,
                  "Cache file (default: $FP4KIT_TUNE_CACHE, $XDG_CACHE_HOME/fp4kit/tune.json or "
                  "~/.cache/fp4kit/tune.json)");
  sub->add_option("--repeats", args->repeats, "Timed graph replays per tactic (median)")->capture_default_str();
  sub->add_flag("--exhaustive-report", args->exhaustive_report, "Print every tactic's time at every point");
  sub->add_option("--moe", args->moe,
                  "MoE layers (the `bench moe` presets: deepseek-v3, fi-256, fi-32, qwen3-30b-a3b, qwen3.6-35b-a3b, "
                  "mixtral-8x7b, all, or HxExKxI): tune fused_moe's FC1 and FC2 grouped GEMMs");
  sub->add_option("--t", args->t,
                  "Token counts T of --moe (list or range; default 1,2,4,8,16,64,256,1024,4096,16384); each is "
                  "tuned at its bucket");
  sub->add_option("--ep", args->ep, "Expert-parallel size of --moe (E / ep experts per rank)")->capture_default_str();
  return Command{sub, [args] { return run_tune(*args); }};
}

}  // namespace fp4kit::cli
