// fp4kit_quant_bench: the quantization benchmark without the CLI (same options as
// `fp4kit bench quantize`; see bench/bench_quantize.h).
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_quantize.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  fp4kit::bench::QuantBenchOptions o;
  std::string error;
  bool help = false;
  if (!fp4kit::bench::parse_quant_bench_args(args, &o, &error, &help)) {
    std::fprintf(stderr, "fp4kit_quant_bench: %s\n%s", error.c_str(), fp4kit::bench::quant_bench_usage().c_str());
    return 2;
  }
  if (help) {
    std::printf("%s", fp4kit::bench::quant_bench_usage().c_str());
    return 0;
  }
  return fp4kit::bench::run_quantize_bench(o);
}
