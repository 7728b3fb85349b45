// The MoE layer presets (bench/moe_presets.h).
#include "moe_presets.h"

#include "bench_util.h"  // split_text, parse_count

namespace fp4kit::bench {

std::vector<MoeBenchPreset> default_moe_bench_presets() {
  return {
      {"deepseek-v3", 7168, 256, 8, 2048},   {"fi-256", 7168, 256, 8, 256},
      {"fi-32", 7168, 32, 8, 2048},          {"qwen3-30b-a3b", 2048, 128, 8, 768},
      {"qwen3.6-35b-a3b", 2048, 256, 8, 512}, {"mixtral-8x7b", 4096, 8, 2, 14336},
  };
}

bool parse_moe_bench_presets(const std::string& text, std::vector<MoeBenchPreset>* out, std::string* error,
                             const std::string& option) {
  const std::vector<MoeBenchPreset> all = default_moe_bench_presets();
  std::vector<MoeBenchPreset> presets;
  auto add = [&](const MoeBenchPreset& p) {
    for (const auto& e : presets) {
      if (e.name == p.name) return;
    }
    presets.push_back(p);
  };
  for (const std::string& item : split_text(text, ',')) {
    if (item == "all") {
      for (const auto& p : all) add(p);
      continue;
    }
    bool matched = false;
    for (const auto& p : all) {
      if (p.name == item) {
        add(p);
        matched = true;
      }
    }
    if (matched) continue;
    const std::vector<std::string> dims = split_text(item, 'x');
    int64_t v[4] = {0, 0, 0, 0};
    bool ok = dims.size() == 4;
    for (size_t i = 0; ok && i < 4; ++i) ok = parse_count(dims[i], &v[i]) && v[i] > 0;
    if (ok) {
      if (v[0] % 64 != 0 || v[3] % 64 != 0 || v[2] > v[1]) {
        *error = option + ": '" + item + "': H and I must be multiples of 64 and k <= E";
        return false;
      }
      add({item, v[0], v[1], v[2], v[3]});
      continue;
    }
    std::string names;
    for (const auto& p : all) names += p.name + ", ";
    *error = option + ": unknown preset '" + item + "' (" + names + "all, or HxExKxI)";
    return false;
  }
  *out = presets;
  return true;
}

}  // namespace fp4kit::bench
