// bench/moe_presets.h — the MoE layer presets of `fp4kit bench moe`, shared with `fp4kit tune --moe`
// (one table, so that tuned layers are the benchmarked ones).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fp4kit::bench {

// One MoE layer: E experts of FC1 [2I, H] (up; gate) and FC2 [H, I], top_k experts per token.
struct MoeBenchPreset {
  std::string name;  // e.g. "deepseek-v3"
  int64_t hidden = 0;   // H, a multiple of 64
  int64_t experts = 0;  // E
  int64_t top_k = 0;    // k
  int64_t inter = 0;    // I, a multiple of 64
};

// deepseek-v3 (7168, 256, 8, 2048), fi-256 (7168, 256, 8, 256), fi-32 (7168, 32, 8, 2048),
// qwen3-30b-a3b (2048, 128, 8, 768), qwen3.6-35b-a3b (2048, 256, 8, 512), mixtral-8x7b (4096, 8, 2, 14336)
// as (H, E, k, I).
std::vector<MoeBenchPreset> default_moe_bench_presets();

// Comma-separated preset names, "all", or HxExKxI (e.g. 2048x64x4x512), without duplicates.
// Returns false with `error` set ("<option>: ...") on an unknown name or a bad HxExKxI.
bool parse_moe_bench_presets(const std::string& text, std::vector<MoeBenchPreset>* out, std::string* error,
                             const std::string& option = "--preset");

}  // namespace fp4kit::bench
