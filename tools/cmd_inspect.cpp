// fp4kit inspect FILE_OR_DIR: the tensors of a safetensors file or (sharded) checkpoint, their
// dtypes, shapes and sizes, totals, and the quantization format (docs/QUANTIZER.md).
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "fp4kit/safetensors.h"
#include "src/io/checkpoint_quantizer.h"

namespace fp4kit::cli {
namespace {

struct InspectOptions {
  std::string path;
  bool json = false;
  bool summary = false;
};

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int run_inspect(const InspectOptions& opt) {
  std::unique_ptr<st::Checkpoint> c;
  check(st::Checkpoint::open(opt.path, &c));
  const io::QuantFormatInfo q = io::detect_quant_format(*c);
  std::map<std::string, std::pair<int64_t, uint64_t>> per_dtype;  // count, bytes
  for (const auto& [name, t] : c->tensors()) {
    auto& e = per_dtype[st::dtype_name(t.info->dtype)];
    ++e.first;
    e.second += t.info->nbytes();
  }
  const bool sharded = c->shards().size() > 1;

  if (opt.json) {
    nlohmann::ordered_json j;
    j["path"] = opt.path;
    j["shards"] = c->shard_names();
    j["format"] = q.format;
    j["nvfp4_modules"] = q.nvfp4_modules;
    j["inconsistent_modules"] = q.inconsistent_modules;
    if (!q.hf_quant_config.empty()) j["hf_quant_config"] = q.hf_quant_config;
    j["total_bytes"] = c->total_tensor_bytes();
    j["tensors"] = nlohmann::ordered_json::array();
    if (!opt.summary) {
      for (const auto& [name, t] : c->tensors()) {
        j["tensors"].push_back({{"name", name},
                                {"dtype", st::dtype_name(t.info->dtype)},
                                {"shape", t.info->shape},
                                {"bytes", t.info->nbytes()},
                                {"file", c->shard_names()[t.shard]}});
      }
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }

  if (!opt.summary) {
    std::vector<std::string> headers = {"tensor", "dtype", "shape", "bytes"};
    if (sharded) headers.push_back("file");
    Table table(headers, {Table::Align::kLeft, Table::Align::kLeft, Table::Align::kLeft, Table::Align::kRight,
                          Table::Align::kLeft});
    for (const auto& [name, t] : c->tensors()) {
      std::vector<std::string> row = {name, st::dtype_name(t.info->dtype), shape_string(t.info->shape),
                                      format_bytes(double(t.info->nbytes()))};
      if (sharded) row.push_back(c->shard_names()[t.shard]);
      table.add_row(row);
    }
    std::printf("%s\n\n", table.render("  ", true).c_str());
  }
  std::printf("%s: %zu tensors in %zu file%s, %s (%llu bytes)\n", opt.path.c_str(), c->tensors().size(),
              c->shards().size(), c->shards().size() == 1 ? "" : "s", format_bytes(double(c->total_tensor_bytes())).c_str(),
              static_cast<unsigned long long>(c->total_tensor_bytes()));
  for (const auto& [d, e] : per_dtype)
    std::printf("  %-8s %6lld tensors  %s\n", d.c_str(), static_cast<long long>(e.first), format_bytes(double(e.second)).c_str());
  std::printf("quantization: %s\n", q.format.c_str());
  if (q.nvfp4_modules) std::printf("  NVFP4 modules: %d\n", q.nvfp4_modules);
  if (q.inconsistent_modules)
    std::printf("  WARNING: %d weight_scale_2 tensors without a consistent weight/weight_scale pair\n",
                q.inconsistent_modules);
  if (!q.hf_quant_config.empty()) std::printf("  hf_quant_config.json: %s\n", q.hf_quant_config.c_str());
  return 0;
}

}  // namespace

Command add_inspect_command(CLI::App& app) {
  auto opt = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand(
      "inspect", "List the tensors of a safetensors file or checkpoint directory and detect its quantization format");
  sub->add_option("path", opt->path, "A .safetensors file, or a directory (with model.safetensors.index.json)")
      ->required();
  sub->add_flag("--json", opt->json, "Print JSON instead of the text report");
  sub->add_flag("--summary", opt->summary, "Totals and format only, no per-tensor list");
  return {sub, [opt] { return run_inspect(*opt); }};
}

}  // namespace fp4kit::cli
