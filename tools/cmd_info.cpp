// fp4kit info: what this build is and which paths (CPU reference, GPU kernels) will run here.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "fp4kit/device.h"
#include "fp4kit/gemm.h"

#ifndef FP4KIT_CLI_CUTLASS_VERSION
#define FP4KIT_CLI_CUTLASS_VERSION "unknown"
#endif
#ifndef FP4KIT_CLI_CUDA_TOOLKIT_VERSION
#define FP4KIT_CLI_CUDA_TOOLKIT_VERSION "unknown"
#endif
#ifndef FP4KIT_CLI_BUILD_TYPE
#define FP4KIT_CLI_BUILD_TYPE "unknown"
#endif

namespace fp4kit::cli {
namespace {

struct InfoOptions {
  bool json = false;
  bool tactics = false;
};

// CUDA encodes versions as 1000*major + 10*minor.
std::string cuda_version_string(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string compiler_string() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return "g++ " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
         std::to_string(__GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

// Why the GPU kernels cannot run here; empty when they can.
std::string gpu_unavailable_reason() {
  const DeviceInfo& d = device_info();
  if (!d.available) return d.reason.empty() ? "no CUDA device" : d.reason;
  if (!has_sm90a_device())
    return "device is sm_" + std::to_string(d.compute_capability) + "; the kernels need sm_90a";
  return {};
}

int run_info(const InfoOptions& opt) {
  const DeviceInfo& d = device_info();
  const std::string gpu_reason = gpu_unavailable_reason();
  const std::vector<GemmTacticInfo> tactics = gemm_tactics();

  if (opt.json) {
    nlohmann::ordered_json j;
    j["version"] = version();
    j["source_revision"] = source_revision();
    j["build"] = {{"type", FP4KIT_CLI_BUILD_TYPE},
                  {"cuda_toolkit", FP4KIT_CLI_CUDA_TOOLKIT_VERSION},
                  {"cuda_archs", build_cuda_archs()},
                  {"cutlass", FP4KIT_CLI_CUTLASS_VERSION},
                  {"compiler", compiler_string()}};
    nlohmann::ordered_json gpu = {{"available", d.available},
                          {"driver_version", d.driver_version},
                          {"runtime_version", d.runtime_version}};
    if (d.available) {
      gpu["name"] = d.name;
      gpu["compute_capability"] = d.compute_capability;
      gpu["sm_count"] = d.sm_count;
      gpu["l2_bytes"] = d.l2_bytes;
      gpu["memory_bytes"] = d.global_memory_bytes;
      gpu["dram_peak_gbps"] = d.dram_peak_gbps;
    } else {
      gpu["reason"] = d.reason;
    }
    j["gpu"] = gpu;
    j["paths"] = {{"cpu_reference", true}, {"gpu_kernels", gpu_reason.empty()}};
    if (!gpu_reason.empty()) j["paths"]["gpu_reason"] = gpu_reason;
    nlohmann::ordered_json tj = nlohmann::ordered_json::array();
    for (const auto& t : tactics) tj.push_back({{"id", t.id}, {"name", t.name}});
    j["gemm_tactics"] = tj;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }

  Table t({"", ""}, {Table::Align::kLeft, Table::Align::kLeft});
  t.add_row({"version", version()});
  t.add_row({"source", source_revision()});
  t.add_row({"build", std::string(FP4KIT_CLI_BUILD_TYPE) + ", CUDA " + FP4KIT_CLI_CUDA_TOOLKIT_VERSION +
                          ", archs " + build_cuda_archs() + ", CUTLASS " + FP4KIT_CLI_CUTLASS_VERSION + ", " +
                          compiler_string()});
  if (d.available) {
    const int cc = d.compute_capability;
    t.add_row({"GPU", d.name});
    t.add_row({"", "sm_" + std::to_string(cc) + " (CC " + std::to_string(cc / 10) + "." + std::to_string(cc % 10) +
                       "), " + std::to_string(d.sm_count) + " SMs, L2 " + format_bytes(double(d.l2_bytes)) +
                       ", memory " + format_bytes(double(d.global_memory_bytes))});
    if (d.dram_peak_gbps > 0) {
      char bw[96];
      std::snprintf(bw, sizeof(bw), "DRAM peak %.2f TB/s (%.1f GB/s per SM)", d.dram_peak_gbps / 1e3,
                    d.dram_peak_gbps / std::max(d.sm_count, 1));
      t.add_row({"", bw});
    }
  } else {
    t.add_row({"GPU", "none (" + d.reason + ")"});
  }
  t.add_row({"CUDA", "driver " + cuda_version_string(d.driver_version) + ", runtime " +
                         cuda_version_string(d.runtime_version)});
  t.add_row({"CPU reference", "yes"});
  t.add_row({"GPU kernels", gpu_reason.empty() ? "yes" : "no (" + gpu_reason + ")"});
  t.add_row({"GEMM tactics", std::to_string(tactics.size()) + (opt.tactics ? "" : " (--tactics lists them)")});
  std::printf("%s\n", t.render("", false, false).c_str());
  if (opt.tactics) {
    Table tt({"id", "name"}, {Table::Align::kRight, Table::Align::kLeft});
    for (const auto& x : tactics) tt.add_row({std::to_string(x.id), x.name});
    std::printf("\n%s\n", tt.render("  ").c_str());
  }
  return 0;
}

}  // namespace

Command add_info_command(CLI::App& app) {
  auto opt = std::make_shared<InfoOptions>();
  CLI::App* sub = app.add_subcommand("info", "Build, GPU and which paths (CPU reference / GPU kernels) run here");
  sub->add_flag("--json", opt->json, "Print JSON instead of text");
  sub->add_flag("--tactics", opt->tactics, "List the GEMM tactics");
  return {sub, [opt] { return run_info(*opt); }};
}

}  // namespace fp4kit::cli
