// fp4kit bench quantize|gemm|moe ...: dispatch only. The benchmarks live in bench/ (target fp4kit_bench)
// and parse their own options, so the words after `bench quantize` / `bench gemm` / `bench moe` are handed over
// unchanged (their --help prints the benchmark's usage). A benchmark that is not part of this build
// answers "not built" with exit code 2, so the CLI always builds.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"

#if defined(FP4KIT_HAVE_BENCH) && __has_include("bench/bench_quantize.h")
#include "bench/bench_quantize.h"
#define FP4KIT_CLI_HAVE_QUANT_BENCH 1
#endif
#if defined(FP4KIT_HAVE_BENCH) && __has_include("bench/bench_gemm.h")
#include "bench/bench_gemm.h"
#define FP4KIT_CLI_HAVE_GEMM_BENCH 1
#endif
#if defined(FP4KIT_HAVE_BENCH) && __has_include("bench/bench_moe.h")
#include "bench/bench_moe.h"
#define FP4KIT_CLI_HAVE_MOE_BENCH 1
#endif

namespace fp4kit::cli {
namespace {

struct BenchArgs {
  std::vector<std::string> quantize, gemm;
};

[[maybe_unused]] int not_built(const char* which) {
  std::fprintf(stderr, "fp4kit: error: bench %s: not built (this build has no bench/bench_%s)\n", which, which);
  return 2;
}

// Parses with the benchmark's own parser, then runs it. Parse errors are one line, exit code 2.
template <class Options, class Parse, class Usage, class Run>
int run_bench(const char* which, const std::vector<std::string>& args, Parse parse, Usage usage, Run run) {
  Options options;
  std::string error;
  bool help = false;
  if (!parse(args, &options, &error, &help)) {
    std::fprintf(stderr, "fp4kit: error: bench %s: %s (see fp4kit bench %s --help)\n", which, error.c_str(), which);
    return 2;
  }
  if (help) {
    std::printf("%s", usage().c_str());
    return 0;
  }
  return run(options);
}

int run_quantize(const std::vector<std::string>& args) {
#if defined(FP4KIT_CLI_HAVE_QUANT_BENCH)
  return run_bench<bench::QuantBenchOptions>("quantize", args, bench::parse_quant_bench_args,
                                             bench::quant_bench_usage, bench::run_quantize_bench);
#else
  (void)args;
  return not_built("quantize");
#endif
}

int run_gemm(const std::vector<std::string>& args) {
#if defined(FP4KIT_CLI_HAVE_GEMM_BENCH)
  return run_bench<bench::GemmBenchOptions>("gemm", args, bench::parse_gemm_bench_args, bench::gemm_bench_usage,
                                            bench::run_gemm_bench);
#else
  (void)args;
  return not_built("gemm");
#endif
}

int run_moe(const std::vector<std::string>& args) {
#if defined(FP4KIT_CLI_HAVE_MOE_BENCH)
  return run_bench<bench::MoeBenchOptions>("moe", args, bench::parse_moe_bench_args, bench::moe_bench_usage,
                                           bench::run_moe_bench);
#else
  (void)args;
  return not_built("moe");
#endif
}

// A subcommand whose arguments all go, in order, to the benchmark's parser.
CLI::App* add_forwarding(CLI::App& parent, const char* name, const char* description) {
  CLI::App* sub = parent.add_subcommand(name, description);
  sub->set_help_flag();    // --help is the benchmark's
  sub->allow_extras();     // unknown options are collected in order
  sub->prefix_command();   // and so is everything after the first positional
  sub->footer("Options are the benchmark's own: fp4kit bench " + std::string(name) + " --help");
  return sub;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks: bench quantize|gemm|moe [options] (docs/CLI.md)");
  bench->require_subcommand(1, 1);
  CLI::App* quantize = add_forwarding(*bench, "quantize", "Quantization kernels vs memory bandwidth");
  CLI::App* gemm = add_forwarding(*bench, "gemm", "NVFP4 GEMMs vs cuBLASLt BF16/FP8 on LLM layer shapes");
  CLI::App* moe = add_forwarding(*bench, "moe", "NVFP4 fused MoE layer vs cuBLASLt BF16 on MoE model shapes");
  return {bench, [quantize, gemm, moe] {
            if (quantize->parsed()) return run_quantize(quantize->remaining());
            if (gemm->parsed()) return run_gemm(gemm->remaining());
            if (moe->parsed()) return run_moe(moe->remaining());
            throw CliError("bench needs a benchmark: quantize, gemm or moe");
          }};
}

}  // namespace fp4kit::cli
